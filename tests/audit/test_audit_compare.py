"""Baseline comparison: regressions are found, seed twins and the run itself stay quiet."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from runtree import write_run

from runlens.cli import main
from runlens.compare import Thresholds, compare_runs
from runlens.io.loader import load_run
from tests.runs import update_meta


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
    # tau three times the baseline's: within the shared steps it never reaches the baseline's 90%.
    conv = result.convergence
    assert conv.slower and conv.run_step is None and conv.ratio is None and conv.baseline_step > 0
    quick = compare_runs(runs["base"], runs["slow"]).convergence
    assert not quick.slower and quick.ratio is not None and quick.ratio < 1.0


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
    assert cli(runs["base"]).exit_code == 2  # a baseline is required
    # The baseline may be given positionally too.
    assert cli(runs["regressed"], runs["base"]).exit_code == 1


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


def _set_config(run, **config):
    update_meta(run, config=config)


def test_config_diff_flattens_nested_keys(tmp_path):
    from runlens.compare import config_diff

    changes = {c.key: c for c in config_diff(
        {"lr": 10, "optim": {"name": "sgd", "betas": [0.9, 0.99]}, "epochs": 3, "new": True},
        {"lr": 0.01, "optim": {"name": "sgd", "betas": [0.9, 0.999]}, "epochs": 3.0, "old": "x"})}
    assert sorted(changes) == ["lr", "new", "old", "optim.betas"]
    assert changes["lr"].kind == "changed" and changes["lr"].knob == "learning rate"
    assert changes["new"].kind == "added" and changes["old"].kind == "removed"
    assert changes["optim.betas"].knob == "optimizer"


def test_a_finding_is_linked_to_the_changed_learning_rate(tmp_path):
    base = write_run(tmp_path / "base", seed=1)
    bad = write_run(tmp_path / "bad", kind="diverged", seed=4)
    _set_config(base, lr=0.01, batch_size=32, model={"width": 64})
    _set_config(bad, lr=10, batch_size=32, model={"width": 64})
    result = compare_runs(bad, base)
    assert [c.key for c in result.config_changes] == ["lr"]
    nan = next(f for f in result.findings if f.code == "baseline_new_nonfinite")
    assert nan.evidence["config_changes"] == ["lr: 0.01 -> 10"]
    assert nan.advice.startswith("The config changed against the baseline (lr: 0.01 -> 10)")
    data = json.loads(cli(bad, base, "--format", "json", "--fail-on", "never").stdout)
    assert data["config_diff"] == [{"key": "lr", "kind": "changed", "run": 10, "baseline": 0.01,
                                    "knob": "learning rate"}]
    text = cli(bad, base, "--fail-on", "never").stdout
    assert "config diff (run vs baseline):" in text and "lr  changed (learning rate): 0.01 -> 10" in text
    md = cli(bad, base, "--format", "md", "--fail-on", "never").stdout
    assert "| lr | changed (learning rate) | 10 | 0.01 |" in md
    # A change no check can be explained by is listed but linked to nothing.
    _set_config(bad, lr=0.01, batch_size=32, model={"width": 64}, note="rerun")
    quiet = compare_runs(bad, base)
    assert [c.key for c in quiet.config_changes] == ["note"]
    assert all("config_changes" not in f.evidence for f in quiet.findings)


def test_cli_colour_only_when_asked(runs):
    painted = CliRunner().invoke(main, ["compare", str(runs["regressed"]), str(runs["base"]), "--color", "always"],
                                 color=True)
    assert "\x1b[1;31m" in painted.stdout
    plain = CliRunner().invoke(main, ["compare", str(runs["regressed"]), str(runs["base"])], color=True)
    assert "\x1b[" not in plain.stdout  # auto: CliRunner's stdout is not a terminal
