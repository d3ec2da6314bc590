"""analyze -v's evidence: one labelled list per finding, or the raw keys; never another run's lists."""

from __future__ import annotations

import pytest

from runlens.diagnosis import CurveVerdict, Diagnosis, Finding
from runlens.render.report.text import render
from runlens.report_data import evidence_of


def _diagnosis(n: int) -> Diagnosis:
    findings = tuple(Finding(code="loss_spikes", severity="warning", title=f"spike {i}", step=10 * i,
                             evidence={"spike_z": 9.5 + i, "z_min": 6.0}) for i in range(n))
    return Diagnosis(path="/runs/x", name="x", status="finished",
                     curve=CurveVerdict("healthy", "the loss fell"), findings=findings)


def test_labelled_evidence_of_the_same_diagnosis_is_shown_with_observations_and_thresholds_apart():
    d = _diagnosis(2)
    out = render(d, verbose=True, evidence=evidence_of(d))
    assert out.count("observed:") == 2 and out.count("judged against:") == 2


def test_without_labelled_evidence_the_raw_keys_are_shown_as_words():
    out = render(_diagnosis(1), verbose=True)
    assert "spike z: 9.5" in out and "judged against:" not in out


@pytest.mark.parametrize("given", [0, 1, 3])
def test_evidence_for_another_number_of_findings_is_refused(given):
    with pytest.raises(ValueError, match=f"evidence for {given} findings given with a diagnosis of 2"):
        render(_diagnosis(2), verbose=True, evidence=evidence_of(_diagnosis(given)))


def test_the_evidence_is_not_read_without_verbose():
    assert "spike z" not in render(_diagnosis(2), evidence=evidence_of(_diagnosis(3)))
