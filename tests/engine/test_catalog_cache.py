"""The catalog parses the detectors' docstrings once, yet follows the registry and the written tables."""

from __future__ import annotations

from runlens import codes
from runlens.detectors import REGISTRY, catalog


def test_a_second_call_parses_no_docstring_again_and_hands_out_its_own_dict():
    catalog._docstring_entries.cache_clear()
    first = catalog.documented()
    second = catalog.documented()
    info = catalog._docstring_entries.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    assert first == second and first is not second
    first.pop("loss_spikes")
    assert "loss_spikes" in catalog.documented()


def test_a_detector_registered_later_is_documented(monkeypatch):
    catalog.documented()
    monkeypatch.setitem(REGISTRY, "zz_registered_late", REGISTRY["loss_spikes"])
    entry = catalog.documented()["zz_registered_late"]
    assert entry.code == "zz_registered_late" and entry.sections == catalog.documented()["loss_spikes"].sections


def test_a_written_entry_changed_after_the_first_call_reads_through(monkeypatch):
    catalog.documented()
    monkeypatch.setitem(codes.COMPARE_CODES, "baseline_new_spikes",
                        {**codes.COMPARE_CODES["baseline_new_spikes"], "What to try": "Clip."})
    assert catalog.documented()["baseline_new_spikes"].sections["What to try"] == "Clip."
    assert codes.advice("baseline_new_spikes") == "Clip."
