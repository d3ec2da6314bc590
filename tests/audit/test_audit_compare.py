"""Baseline comparison: regressions are found, seed twins and the run itself stay quiet."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from runtree import write_run

from runlens.cli import main
from runlens.compare import Thresholds, compare_runs
from runlens.io.loader import load_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cmp")
    return {
        "base": write_run(base / "base", seed=1),
        "regressed": write_run(base / "regressed", kind="regressed", seed=2),
        "slow": write_run(base / "slow", kind="slow", seed=3),
        "diverged": write_run(base / "diverged", kind="diverged", seed=4),
        "spiky": write_run(base / "spiky", kind="spiky", seed=5),
        "shifted": write_run(base / "shifted", grad_scale=300.0, seed=6),
        "short": write_run(base / "short", steps=10, seed=7, layers=False, evals=False),
    }


def codes(result):
    return [f.code for f in result.findings]


@pytest.mark.parametrize("seed", range(2, 12))
def test_a_seed_twin_is_quiet(runs, tmp_path, seed):
    twin = write_run(tmp_path / f"twin-{seed}", seed=seed + 100)
    assert codes(compare_runs(twin, runs["base"])) == []


def test_a_run_against_itself_is_quiet(runs):
    result = compare_runs(runs["base"], runs["base"])
    assert codes(result) == [] and result.loss.p_value > 0.1 and result.loss.effect_size == 0


def test_a_higher_final_loss_is_a_regression(runs):
    result = compare_runs(runs["regressed"], runs["base"])
    assert "baseline_regression_loss" in codes(result)
    assert result.loss.worse and result.loss.relative_change > 0.3 and result.loss.p_value < 1e-6
    finding = next(f for f in result.findings if f.code == "baseline_regression_loss")
    assert finding.severity == "error" and "Cliff's delta" in finding.title
    assert "baseline_regression_val_loss" in codes(result)


def test_a_lower_loss_is_not_a_regression(runs):
    assert "baseline_regression_loss" not in codes(compare_runs(runs["base"], runs["regressed"]))


def test_slower_convergence(runs):
    result = compare_runs(runs["slow"], runs["base"])
    assert "baseline_slower_convergence" in codes(result)
    assert result.convergence.ratio is None or result.convergence.ratio >= 1.5


def test_new_nonfinite(runs):
    result = compare_runs(runs["diverged"], runs["base"])
    assert "baseline_new_nonfinite" in codes(result)
    assert result.run_nonfinite_step == 300 + 40 and result.baseline_nonfinite_step is None
    # Reversed, the baseline's NaN is not the run's regression.
    assert "baseline_new_nonfinite" not in codes(compare_runs(runs["base"], runs["diverged"]))


def test_new_spikes(runs):
    result = compare_runs(runs["spiky"], runs["base"])
    assert codes(result) == ["baseline_new_spikes"]
    assert result.spikes.run_count == 8 and result.spikes.baseline_count == 0


def test_gradient_shift_by_layer(runs):
    result = compare_runs(runs["shifted"], runs["base"])
    assert codes(result) == ["baseline_gradient_shift"]
    finding = result.findings[0]
    assert set(finding.layers) == {"embed.weight", "hidden.weight", "head.weight"}
    assert all(abs(g.log10_ratio - 2.48) < 0.1 for g in result.gradient_shifts)


def test_too_few_shared_steps_is_a_note(runs):
    result = compare_runs(runs["short"], runs["base"])
    assert result.loss is None and any("share 10" in n for n in result.notes)


def test_thresholds_are_parameters(runs):
    loose = compare_runs(runs["regressed"], runs["base"], thresholds=Thresholds(min_change=1.0))
    assert "baseline_regression_loss" not in codes(loose)


def test_accepts_loaded_runs(runs):
    a = compare_runs(load_run(runs["regressed"]), load_run(runs["base"]))
    assert codes(a) == codes(compare_runs(runs["regressed"], runs["base"]))


def cli(*args):
    return CliRunner().invoke(main, ["compare", *map(str, args)], catch_exceptions=False)


def test_cli_exit_status(runs):
    assert cli(runs["regressed"], "--baseline", runs["base"]).exit_code == 1
    assert cli(runs["spiky"], "--baseline", runs["base"]).exit_code == 0  # a warning
    assert cli(runs["spiky"], "--baseline", runs["base"], "--fail-on", "warning").exit_code == 1
    assert cli(runs["base"], "--baseline", runs["base"]).exit_code == 0
    missing = cli(runs["base"], "--baseline", runs["base"].parent / "nope")
    assert missing.exit_code == 2 and missing.stderr.startswith("runlens: ")
    assert cli(runs["base"]).exit_code == 2  # --baseline is required


def test_cli_formats(runs):
    args = [runs["regressed"], "--baseline", runs["base"], "--format"]
    data = json.loads(cli(*args, "json").stdout)
    assert data["loss"]["worse"] is True and data["findings"][0]["code"].startswith("baseline_")
    md = cli(*args, "md").stdout
    assert "| check | run | baseline | test |" in md and "baseline_regression_loss" in md
    html = cli(*args, "html").stdout
    assert html.startswith("<!doctype html>") and "baseline_regression_loss" in html
    text = cli(*args, "text").stdout
    assert "ERROR" in text and "final loss" in text
