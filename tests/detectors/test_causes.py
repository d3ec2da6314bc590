"""Cause first: the root cause leads (even a warning before the error it produced), symptoms say ``caused_by``, and the
verdict line names the cause. On the sample runs the injected fault's code comes first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nonfinite_runs import healthy_run, nan_loss_at

from runlens import analyze
from runlens.analysis import _order
from runlens.detectors._causes import LINKS, causes_of, order_by_cause, roots
from runlens.detectors.catalog import documented
from runlens.diagnosis import CurveVerdict, Finding

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


def f(code: str, severity: str = "warning", step: int | None = 10, **evidence) -> Finding:
    return Finding(code=code, severity=severity, title=code, step=step, evidence=evidence)


def test_a_cause_leads_its_symptoms_within_a_severity_whatever_their_steps():
    found = [f("loss_spikes", step=5), f("unstable", step=1), f("learning_rate_too_high", step=400)]
    ordered, curve = order_by_cause(found, CurveVerdict("unstable", "it swings"), _order)
    # the two symptoms of the same cause keep their usual order (by step) after it
    assert [x.code for x in ordered] == ["learning_rate_too_high", "unstable", "loss_spikes"]
    assert ordered[1].evidence["caused_by"] == ["learning_rate_too_high"]
    assert ordered[2].evidence["caused_by"] == ["learning_rate_too_high"]
    assert "caused_by" not in ordered[0].evidence
    assert curve.reason == "it swings; likely cause: learning_rate_too_high"
    assert curve.evidence["likely_cause"] == ["learning_rate_too_high"]


def test_a_warning_cause_leads_the_error_it_produced_across_severities():
    found = [f("learning_rate_too_high", "warning"), f("nonfinite_loss", "error", cause="explosion")]
    ordered, _ = order_by_cause(found, None, _order)
    assert [x.code for x in ordered] == ["learning_rate_too_high", "nonfinite_loss"]
    assert ordered[1].evidence["caused_by"] == ["learning_rate_too_high"]  # the symptom keeps its cause
    assert ordered[1].severity == "error" and ordered[0].severity == "warning"  # severities unchanged


def test_severity_still_orders_findings_that_are_not_linked():
    found = [f("plateau", "warning", step=5), f("nonfinite_loss", "error", step=50, cause="numerical")]
    ordered, _ = order_by_cause(found, None, _order)
    assert [x.code for x in ordered] == ["nonfinite_loss", "plateau"]


def test_a_cause_is_lifted_through_a_chain_of_symptoms():
    # weights grow -> gradients explode (error) -> the curve diverges (error); spikes unrelated
    found = [f("diverged", "error", step=90), f("exploding_gradients", "error", step=80),
             f("weight_norm_growth", "warning", step=10), f("late_loss_variance", "warning", step=5)]
    ordered, _ = order_by_cause(found, None, _order)
    assert [x.code for x in ordered] == ["weight_norm_growth", "exploding_gradients", "diverged",
                                         "late_loss_variance"]


def test_a_numerical_fault_in_the_loss_is_the_cause_of_the_nan_gradients_not_the_reverse():
    num = [f("nonfinite_gradient", "error", step=300), f("nonfinite_loss", "error", step=300, cause="numerical")]
    ordered, _ = order_by_cause(num, None, _order)
    assert [x.code for x in ordered] == ["nonfinite_loss", "nonfinite_gradient"]
    boom = [f("nonfinite_loss", "error", step=45, cause="explosion"), f("exploding_gradients", "error", step=44),
            f("nonfinite_gradient", "error", step=44)]
    ordered, _ = order_by_cause(boom, None, _order)
    assert ordered[0].code == "exploding_gradients"
    assert "nonfinite_gradient" not in ordered[-1].evidence.get("caused_by", [])


def test_a_layer_left_out_of_the_optimizer_comes_before_the_spikes_it_causes():
    ordered, _ = order_by_cause([f("loss_spikes", step=3), f("dead_layers", step=900)], None, _order)
    assert [x.code for x in ordered] == ["dead_layers", "loss_spikes"]


def test_summed_gradients_lead_the_too_large_steps_they_make():
    # A missing zero_grad steps along the sum of every gradient so far: the learning rate looks too
    # high and the run blows up; the bug, found at its first step, leads both (third: nozero-resreg).
    found = [f("learning_rate_too_high", "error", step=1), f("diverged", "error", step=20),
             f("gradients_accumulate", "error", step=3)]
    ordered, _ = order_by_cause(found, None, _order)
    assert ordered[0].code == "gradients_accumulate"
    assert "gradients_accumulate" in ordered[1].evidence["caused_by"]
    # Without the bug's finding the rate stays the cause.
    ordered, _ = order_by_cause(found[:2], None, _order)
    assert [x.code for x in ordered] == ["learning_rate_too_high", "diverged"]

def test_no_links_no_change():
    found = [f("no_validation", "info", None), f("plateau", step=30), f("overfitting", step=80)]
    ordered, curve = order_by_cause(found, CurveVerdict("overfitting", "rose"), _order)
    assert list(ordered) == sorted(found, key=_order)
    assert curve.reason == "rose"


def test_the_cause_graph_has_no_cycle_and_names_known_codes():
    codes = set(documented())
    graph = {s: [c for c, _ in causes] for s, causes in LINKS.items()}
    for symptom, causes in graph.items():
        assert symptom in codes and set(causes) <= codes, symptom
        assert symptom not in roots(symptom, graph)


def _first_loud(name: str) -> tuple[str, list[str]]:
    d = analyze(SAMPLES / name)
    codes = [x.code for x in d.findings]
    return codes[0], codes


@pytest.mark.parametrize("name", ["lr_too_low", "vanishing_gradients", "numerical_nan", "nan_divergence",
                                  "dead_layer", "loss_spikes", "late_loss_variance", "lr_too_high",
                                  "underfitting"])
def test_on_sample_runs_the_injected_fault_leads(name):
    exp = json.loads((SAMPLES / name / "expected.json").read_text())
    first, codes = _first_loud(name)
    # the injected fault is the sample's first must-include code (curve codes are derived, not injected)
    injected = [c for c in exp["must_include"] if c not in ("diverged", "unstable", "underfitting", "overfitting")]
    assert first in (injected or exp["must_include"])[:1] or (name == "nan_divergence"
                                                             and first == "learning_rate_too_high"), codes


def test_findings_are_ordered_by_severity_then_cause_first():
    run = healthy_run(evals=False, mutate=nan_loss_at(250, explode=True))
    found = analyze(run).findings
    ranks = [{"error": 0, "warning": 1, "info": 2}[f.severity] for f in found]
    assert ranks == sorted(ranks)
    # within a severity a cause comes before the symptoms that name it (runlens.detectors._causes)
    position = {f.code: i for i, f in enumerate(found)}
    for i, f in enumerate(found):
        for cause in f.evidence.get("caused_by", ()):
            assert position[cause] < i or found[position[cause]].severity != f.severity, (cause, f.code)
    assert "no_validation" not in position  # the loss went NaN: the missing held-out loss judges nothing


def _finding(code: str, **evidence) -> Finding:
    return Finding(code=code, severity="warning", title=code, evidence=evidence)


def test_collapsed_weights_make_underfitting_the_cause_of_the_starved_gradients():
    under = _finding("underfitting", weight_norm_ratio=1e-3)
    present = {f.code: f for f in (under, _finding("vanishing_gradients"), _finding("dead_layers"),
                                   _finding("loss_at_chance"))}
    assert causes_of(present["vanishing_gradients"], present) == ["underfitting"]
    assert causes_of(present["dead_layers"], present) == ["underfitting"]
    assert "underfitting" in causes_of(present["loss_at_chance"], present)
    assert causes_of(under, present) == []


def test_intact_weights_keep_the_starved_gradients_as_the_cause():
    under = _finding("underfitting", weight_norm_ratio=0.8)
    present = {f.code: f for f in (under, _finding("vanishing_gradients"), _finding("loss_at_chance"))}
    assert causes_of(under, present) == ["vanishing_gradients", "loss_at_chance"]
    assert causes_of(present["vanishing_gradients"], present) == []
