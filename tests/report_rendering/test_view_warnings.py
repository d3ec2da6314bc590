"""The report's two warning lists: the reading's and the analysis's, told apart without losing a note."""

from __future__ import annotations

from runlens.diagnosis import CurveVerdict, Diagnosis
from runlens.render.report.view import index_view


def _diagnosis(reading: tuple[str, ...], warnings: tuple[str, ...]) -> Diagnosis:
    return Diagnosis(path="/runs/x", name="x", status="finished", curve=CurveVerdict("healthy", "fell"),
                     findings=(), reading_warnings=reading, warnings=warnings)


def test_reading_warnings_and_analysis_notes_are_listed_apart_in_order():
    v = index_view(_diagnosis(("part 3 unread",), ("part 3 unread", "detector a crashed", "detector b crashed")))
    assert v.reading_warnings == ("part 3 unread",)
    assert v.analysis_warnings == ("detector a crashed", "detector b crashed")


def test_an_analysis_note_that_reads_like_a_reading_warning_is_still_shown():
    v = index_view(_diagnosis(("same words",), ("same words", "same words")))
    assert v.reading_warnings == ("same words",)
    assert v.analysis_warnings == ("same words",)
