"""Round 3 of the hostile campaign as tests: every case of ``round3_cases``/``round3_more``.

Each case runs runlens on an input built to break it (a FIFO where a file is
expected, a part claiming 2x10^8 rows, JSON nested 100,000 deep, escape bytes
in names, ``-o`` at a device) in a child process limited to 2 GB of address
space and 60 s, and fails with the problems it saw, each named by its class
(traceback, internal, hang, memory, injection, rows, outside). The figures
are in docs/reliability.md, "Round 3".
"""

from __future__ import annotations

import os
import sys

import pytest

from .round3 import Ran, all_cases, classify, run_cases

CASES = all_cases()

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs, /proc and prctl: Linux")


# Cases whose fix lies in code another part of the project owns: strict, so the day the fix
# lands this fails and the mark is removed. None at present.
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN[c.name], strict=True))
                                  if c.name in KNOWN else c for c in CASES],
                         ids=[f"{c.klass}:{c.name}" for c in CASES])
def test_case(case, tmp_path):
    problems = case.body(tmp_path)
    assert problems == []


def test_every_class_of_the_issue_has_cases():
    classes = {c.klass for c in CASES}
    assert classes == {"consistency", "hangs", "memory", "bad_input", "injection", "outputs", "signals"}


@pytest.mark.parametrize(("code", "err", "out", "allowed", "kind"), [
    (3, b"runlens: internal error: ValueError\n", b"", (0, 2), "internal"),
    (2, b"runlens: one\nrunlens: two\n", b"", (2,), "traceback"),
    (1, b"Traceback (most recent call last):\n  x\nValueError\n", b"", (1,), "traceback"),
    (0, b"", b"name \x1b]52;c;eA==\x07", (0,), "injection"),
    (0, b"", "title \u202e".encode(), (0,), "injection"),
    (1, b"MemoryError\n", b"", (1,), "memory"),
    (0, b"", b"", (2,), "other"),
])
def test_the_classifier_counts_each_failure(code, err, out, allowed, kind):
    # The campaign's zeros mean something only if its classifier sees each failure.
    problems = classify(Ran(code, out, err), allowed, terminal=True)
    assert problems and problems[0].startswith(kind + ":")
    assert classify(Ran(0, b"ok\n", b""), (0,), terminal=True) == []


def test_a_hang_is_killed_and_counted(tmp_path):
    from . import round3

    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    saved = round3.CASE_SECONDS
    round3.CASE_SECONDS = 5
    try:
        # A child that blocks on a FIFO forever stands in for a runlens bug.
        ran = round3.cli("--version", code_prefix=f"open({str(fifo)!r}).read()")
    finally:
        round3.CASE_SECONDS = saved
    assert ran.code is None and ran.problems[0].startswith("hang:")


def test_run_cases_tallies_by_class(tmp_path):
    fig = run_cases(tmp_path, [c for c in CASES if c.name.startswith("every rank-0")])
    assert sum(fig.cases.values()) == 2 and not fig.failures
