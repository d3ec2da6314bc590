"""One definition per key number: text, JSON, Markdown, audit and compare show the same values;
the verdict step is where the failure starts, shared by headline, finding and JSON."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
from _cli import SAMPLES, invoke
from engine_runs import healthy, meta, write_run

from runlens.analysis import analyze
from runlens.audit import audit
from runlens.compare import compare_runs
from runlens.diagnosis import jsonable
from runlens.io.loader import load_run
from runlens.render.report.markdown import render_markdown
from runlens.render.report.text import number
from runlens.render.report.view import fmt
from runlens.report_data import build_report_data
from runlens.signals import signals_of
from runlens.summary import KEY_NUMBERS, run_numbers

RUNS = ["healthy", "nan_divergence", "numerical_nan", "overfitting", "crash_oom", "exploding_gradients"]


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    root = tmp_path_factory.mktemp("keys")
    for name in RUNS:
        shutil.copytree(SAMPLES / name, root / name)
    return root


# How the text output and the Markdown report show a key number, for each key number they show.
TEXT_LINES = {
    "final_loss": lambda e: f"final loss {number(e['final_loss'])}",
    "val_min": lambda e: f"best val loss {number(e['val_min'])} at step {e['val_min_step']:,}",
    "first_nonfinite_step": lambda e: f"first NaN/Inf loss at step {e['first_nonfinite_step']:,}",
}
MARKDOWN_LINES = {
    "final_loss": lambda e: f"| final loss | {fmt(e['final_loss'])} at step {e['final_loss_step']:,} |",
    "val_min": lambda e: f"| best validation loss | {fmt(e['val_min'])} at step {e['val_min_step']:,} |",
    "first_nonfinite_step": lambda e: f"| first NaN/Inf loss | at step {e['first_nonfinite_step']:,} |",
}


def _assert_shown(output: str, expected: dict, lines: dict) -> None:
    for key, line in lines.items():
        if expected[key] is not None:
            assert line(expected) in output, key


@pytest.mark.parametrize("name", RUNS)
def test_key_numbers_agree_across_commands(copies, name):
    path = copies / name
    run = load_run(path)
    expected = run_numbers(signals_of(run), run)
    assert list(expected) == list(KEY_NUMBERS)
    diagnosis = analyze(run)
    assert dict(diagnosis.key_numbers) == pytest.approx(expected, nan_ok=True) or all(
        same(diagnosis.key_numbers[k], expected[k]) for k in KEY_NUMBERS)
    # JSON
    obj = json.loads(invoke("analyze", path, "--format", "json").stdout)
    assert obj["key_numbers"] == jsonable(expected)
    _assert_shown(invoke("analyze", path).stdout, expected, TEXT_LINES)
    _assert_shown(render_markdown(build_report_data(diagnosis, signals_of(run))), expected, MARKDOWN_LINES)
    # audit
    row = audit([str(path)], workers=1).rows[0]
    assert same(row.final_loss, expected["final_loss"]) and same(row.best_val_loss, expected["val_min"])
    assert row.best_val_step == expected["val_min_step"] and row.steps == expected["steps"]
    assert row.duration_s == pytest.approx(expected["duration_s"]) if expected["duration_s"] else True
    # compare (against itself: the run's side and the baseline's side)
    c = compare_runs(str(path), str(path))
    for k in KEY_NUMBERS:
        assert same(c.run_numbers[k], expected[k]) and same(c.baseline_numbers[k], expected[k]), k
    assert c.run_nonfinite_step == expected["first_nonfinite_step"]


def test_first_nonfinite_step_is_the_loss_step_everywhere(copies):
    """nan_divergence: the gradient goes NaN at 44, the loss at 45; the key number is 45 everywhere."""
    path = copies / "nan_divergence"
    d = analyze(load_run(path))
    assert d.key_numbers["first_nonfinite_step"] == 45
    assert compare_runs(str(path), str(copies / "healthy")).run_nonfinite_step == 45
    assert "first NaN/Inf loss at step 45" in invoke("analyze", path).stdout


def _write_lr10(root):
    """The README's lr=10 failure: the loss jumps from 0.7 to ~4,000 at step 1 and keeps growing."""
    cols = healthy(200, 4)
    s = cols["scalars"]
    n = len(s["step"])
    rng = np.random.default_rng(0)
    s["loss"] = 4000 * 1.02 ** np.arange(n) * np.exp(rng.normal(0, 0.1, n))
    s["loss"][0] = 0.7
    s["lr"] = np.full(n, 10.0)
    return write_run(root / "lr10", run_meta=meta("lr10", layers=cols["layer_names"]), scalars=s,
                     layers=cols["layers"])


def test_the_verdict_step_is_where_the_loss_left_its_start(tmp_path):
    d = analyze(_write_lr10(tmp_path))
    assert d.curve.label == "diverged"
    assert d.verdict_step == 1
    assert d.headline.startswith("Diverged from step 1")
    assert [f.step for f in d.findings if f.code == "diverged"] == [1]
    assert d.to_dict()["verdict_step"] == 1


@pytest.mark.parametrize("name,step", [("nan_divergence", None), ("numerical_nan", 300), ("crash_oom", 250),
                                       ("killed", 300), ("healthy", None), ("overfitting", None)])
def test_the_verdict_step_on_the_samples(name, step):
    """A NaN born in the loss starts at its first NaN; a crash or kill at its stop; a clean run has none;
    the other labels at the step their finding carries."""
    run = load_run(SAMPLES / name)
    d = analyze(run)
    if name == "nan_divergence":  # the loss never came back below its start after the failure began
        loss = signals_of(run).loss
        after = loss.values[loss.steps >= d.verdict_step]
        assert d.verdict_step < 45 and (after > loss.values[0]).all()
    elif name == "overfitting":
        assert d.verdict_step == next(f.step for f in d.findings if f.code == "overfitting")
    else:
        assert d.verdict_step == step
    if d.verdict_step is not None:
        assert f"step {d.verdict_step:,}" in d.headline


def test_the_overfitting_finding_quotes_the_logged_validation_minimum_the_key_numbers_give():
    # The finding's minimum used to be the rolling median (1.288) beside a key number of 1.284.
    import json
    import subprocess
    import sys
    from pathlib import Path

    run = Path(__file__).resolve().parents[2] / "sample_runs" / "overfitting"
    out = subprocess.run([sys.executable, "-m", "runlens", "analyze", str(run), "--format", "json",
                          "--fail-on", "never"], capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    finding = next(f for f in d["findings"] if f["code"] == "overfitting")
    best = d["key_numbers"]
    vmin = next(v for k, v in best.items() if "val" in k and "min" in k and not k.endswith("step"))
    assert abs(finding["evidence"]["val_min"] - vmin) < 1e-9
    assert f"{vmin:.4g}" in finding["title"]
