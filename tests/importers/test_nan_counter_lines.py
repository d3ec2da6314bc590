"""A count of skipped non-finite steps is an event only when it is above 0 (Megatron's
"number of nan iterations: 0" is on every line of a healthy run)."""

from __future__ import annotations

import math

from runlens.analysis import analyze
from runlens.io.importers import text
from runlens.io.remote import open_run


def _megatron(path, nan_at: int | None = None):
    lines = []
    for i in range(1, 61):
        step = 10 * i
        loss = 7.0 * math.exp(-i / 20) + 2.5 + 0.02 * math.sin(i)
        nans = 2 if step == nan_at else 0
        lines.append(f" iteration {step:8d}/  159576 | consumed samples: {step * 96:10d} | elapsed time per "
                     f"iteration (ms): 18495.6 | learning rate: 6.000E-05 | global batch size:    96 | "
                     f"lm loss: {loss:.6E} | loss scale: 4096.0 | grad norm: 1.234 | num zeros: 0.0 | "
                     f"number of skipped iterations: {nans:3d} | number of nan iterations: {nans:3d} |\n")
    path.write_text("".join(lines))
    return path


def _codes(path):
    return [f.code for f in analyze(open_run(str(path))).findings]


def test_counters_of_zero_on_every_line_are_no_nonfinite_event(tmp_path):
    path = _megatron(tmp_path / "train.log")
    assert text.read(path).events == []
    assert "nonfinite_loss" not in _codes(path)


def test_a_line_wrapped_inside_the_nan_counter_is_no_event(tmp_path):
    # A log pasted into a document, wrapped at a fixed width: "number of nan" ends one line, its count
    # starts the next; the count of skipped iterations (0) on the first line still says none was skipped.
    path = tmp_path / "train.log"
    body = _megatron(tmp_path / "flat.log").read_text().replace("number of nan iterations:", "number of nan\niterations:")
    path.write_text(body)
    assert text.read(path).events == []


def test_a_counter_above_zero_is_the_skipped_nonfinite_event(tmp_path):
    path = _megatron(tmp_path / "train.log", nan_at=300)
    (event,) = text.read(path).events
    assert event[1] == "nonfinite_loss" and event[0] == 290  # the last step logged before the line
    assert "nonfinite_loss" in _codes(path)


def test_a_skipped_nan_warning_without_a_counter_is_still_an_event(tmp_path):
    path = _megatron(tmp_path / "train.log")
    with path.open("a") as f:
        f.write("WARNING: NaN loss detected, skipping batch\n")
    assert [e[1] for e in text.read(path).events] == ["nonfinite_loss"]
