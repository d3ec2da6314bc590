"""benchmarks/real_logs.py: how one labeled real log is graded against what runlens said."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.real_logs import LABELS, grade  # noqa: E402


def _out(curve, *codes):
    return {"curve": curve, "findings": [{"code": c} for c in codes]}


def test_a_curve_item_agrees_on_its_label_or_an_accepted_one():
    item = {"path": "x", "curve": "overfitting", "accept": ["unstable"]}
    assert grade(item, 1, _out("overfitting", "overfitting"), "")[0]
    assert grade(item, 0, _out("unstable"), "")[0]
    assert not grade(item, 0, _out("healthy"), "")[0]
    assert not grade(item, 2, None, "runlens: cannot read it")[0]


def test_a_run_that_went_non_finite_must_say_so():
    item = {"path": "x", "curve": "diverged", "accept": ["insufficient_data"], "nonfinite": True}
    assert grade(item, 1, _out("insufficient_data", "nonfinite_gradient"), "")[0]
    ok, said = grade(item, 0, _out("insufficient_data"), "")
    assert not ok and "not reported" in said
    assert grade(item, 1, _out("diverged"), "")[0]


def test_a_file_without_a_curve_agrees_when_refused_in_one_line_or_read_as_insufficient():
    item = {"path": "x", "curve": "no_curve"}
    assert grade(item, 2, None, "runlens: x: no line carries a training step")[0]
    assert grade(item, 0, _out("insufficient_data"), "")[0]
    assert not grade(item, 0, _out("healthy"), "")[0]


def test_the_labels_file_is_well_formed():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    items = tomllib.loads(LABELS.read_text(encoding="utf-8"))["log"]
    curves = {"healthy", "overfitting", "underfitting", "unstable", "diverged", "insufficient_data", "no_curve"}
    assert len(items) >= 40 and len({i["path"] for i in items}) == len(items)
    for i in items:
        assert i["curve"] in curves and set(i.get("accept", [])) <= curves and i.get("why"), i
