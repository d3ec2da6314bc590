"""Output read in ten seconds: the verdict, the cause, each finding and its fix; evidence behind -v,
the verdict line alone with -q; headlines that name a cause and state direction correctly."""

from __future__ import annotations

import re

import pytest
from _cli import SAMPLE_RUNS, SAMPLES, invoke

from runlens.diagnosis import CurveVerdict, Finding
from runlens.report_data.numbers import label_of, unit_of
from runlens.summary import SYMPTOMS, headline


@pytest.mark.parametrize("name", SAMPLE_RUNS)
def test_every_sample_run_reads_in_under_25_lines(name):
    result = invoke("analyze", SAMPLES / name, "--color", "never")
    assert result.exit_code in (0, 1), result.output
    lines = result.stdout.splitlines()
    assert len(lines) < 25, result.stdout
    # The evidence's internal keys and raw NaN stay behind -v.
    evidence = [line for line in lines[5:] if line.startswith("      ") and "fix:" not in line
                and "caused by" not in line]
    assert evidence == [], result.stdout
    assert not re.search(r"\bnan\b", result.stdout), result.stdout


@pytest.mark.parametrize("name", ["nan_divergence", "crash_oom", "overfitting"])
def test_verbose_shows_labelled_evidence_and_quiet_one_line(name):
    verbose = invoke("analyze", SAMPLES / name, "-v")
    assert "observed:" in verbose.stdout and "levene_p_smaller" not in verbose.stdout
    assert len(verbose.stdout.splitlines()) > len(invoke("analyze", SAMPLES / name).stdout.splitlines())
    quiet = invoke("analyze", SAMPLES / name, "-q")
    assert quiet.exit_code == verbose.exit_code
    assert quiet.stdout.count("\n") == 1 and quiet.stdout.startswith(f"{name}: ")
    both = invoke("analyze", SAMPLES / name, "-q", "-v")
    assert both.exit_code == 2 and both.stderr.startswith("runlens: ")


def test_quiet_prints_one_verdict_line_per_run(tmp_path):
    result = invoke("analyze", SAMPLES / "healthy", SAMPLES / "crash_oom", "-q")
    assert result.stdout.splitlines() == [
        line for line in result.stdout.splitlines() if line.startswith(("healthy: ", "crash_oom: "))]
    assert len(result.stdout.splitlines()) == 2


def test_a_failed_run_never_reads_as_plainly_finished():
    text = invoke("analyze", SAMPLES / "nan_divergence").stdout
    assert "status: finished (diverged)" in text
    assert "status: finished " not in text.replace("status: finished (", "")


@pytest.mark.parametrize("name", SAMPLE_RUNS)
def test_headlines_name_a_cause_not_the_symptom(name):
    obj = __import__("json").loads(invoke("analyze", SAMPLES / name, "--format", "json").stdout)
    said = obj["headline"]
    assert said and said.endswith(".") and "\n" not in said
    cause = re.search(r"likely cause: ([^:]+):", said)
    if cause:
        words = cause.group(1)
        assert "_" not in words, said  # a code is not a cause a reader can act on
        assert words.replace(" ", "_") not in SYMPTOMS.get(obj["curve"], ()), said
        assert words != "loss became NaN/Inf", said


def test_underfitting_headline_states_the_direction_from_the_numbers():
    curve = CurveVerdict("underfitting", "the loss barely moved: -20.5% below its start 1", {"step": 300})
    numbers = {"first_loss": 1.0, "final_loss": 1.25}
    said = headline("finished", curve, (), numbers, 300)
    assert "rose 25.0%" in said and "below its start" not in said and "fell" not in said
    said = headline("finished", curve, (), {"first_loss": 1.0, "final_loss": 0.9}, 300)
    assert "fell only 10.0%" in said


def test_a_numerical_nan_names_the_fault_not_nonfinite_loss():
    curve = CurveVerdict("diverged", "the training loss became non-finite at step 300",
                         {"step": 300, "likely_cause": ["nonfinite_loss"]})
    nan = Finding("nonfinite_loss", "error", "Loss became NaN at step 300", 300, evidence={"cause": "numerical"})
    said = headline("finished", curve, (nan,), {"first_nonfinite_step": 300}, 300)
    assert "numerical fault" in said and "nonfinite_loss" not in said
    explosion = Finding("nonfinite_loss", "error", "Loss became NaN at step 300", 300,
                        evidence={"cause": "explosion"})
    said = headline("finished", curve, (explosion,), {"first_nonfinite_step": 300}, 300)
    assert "likely cause" not in said and "no cause found" in said


@pytest.mark.parametrize("key,value,label,unit", [
    ("died_at_step", 250, "Died at step", ""),
    ("z_scores", [3.1, 8.2], "Z-scores", ""),
    ("steps", [40, 41], "Steps", ""),
    ("length", 305, "Length", "steps"),
    ("rise_decades", 12.1, "Rise decades", "orders of magnitude"),
])
def test_evidence_labels_read_as_words_with_their_units(key, value, label, unit):
    assert label_of(key) == label
    assert unit_of(key, value) == unit
