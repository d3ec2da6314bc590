"""One codes catalog: detector, label, comparison and pipeline codes are entries of one catalog, and
the audit's and the comparison's findings take their severity and advice from it."""

from __future__ import annotations

import pytest

from runlens import codes
from runlens.audit.worker import error_record
from runlens.compare.checks import advice as compare_advice
from runlens.detectors import REGISTRY
from runlens.detectors.catalog import documented


def test_every_code_is_one_entry_of_a_known_kind():
    docs = documented()
    kinds = {code: entry.kind for code, entry in docs.items()}
    assert set(kinds.values()) == {"detector", "label", "compare", "pipeline"}
    assert {c for c, k in kinds.items() if k == "compare"} == set(codes.COMPARE_CODES)
    assert {c for c, k in kinds.items() if k == "pipeline"} == set(codes.PIPELINE_CODES)
    assert {c for c, k in kinds.items() if k == "detector"} == set(REGISTRY) - {"curve"}
    assert kinds["curve"] == kinds["healthy"] == "label"


@pytest.mark.parametrize("code", sorted(codes.PIPELINE_CODES))
def test_the_audit_error_finding_is_the_catalog_entry(code):
    [finding] = error_record("runs/x", "boom", code)["object"]["findings"]
    entry = documented()[code]
    assert finding["severity"] == entry.severity
    assert finding["advice"] == entry.sections["What to try"]
    assert finding["title"].endswith(": boom")


def test_audit_and_compare_read_the_catalog_data(monkeypatch):
    monkeypatch.setitem(codes.PIPELINE_CODES, "unreadable_run",
                        {**codes.PIPELINE_CODES["unreadable_run"], "What to try": "Try this."})
    monkeypatch.setitem(codes.COMPARE_CODES, "baseline_new_spikes",
                        {**codes.COMPARE_CODES["baseline_new_spikes"], "What to try": "Try that."})
    [finding] = error_record("runs/x", "boom", "unreadable_run")["object"]["findings"]
    assert finding["advice"] == "Try this."
    assert compare_advice("baseline_new_spikes") == "Try that."
    assert documented()["baseline_new_spikes"].sections["What to try"] == "Try that."
