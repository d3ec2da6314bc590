"""``runlens.testing``: the contributor's kit holds every built-in detector, and catches broken ones."""

from __future__ import annotations

import numpy as np
import pytest

from runlens.detectors import REGISTRY, Detector, Interval, Needs
from runlens.diagnosis import Finding
from runlens.errors import UsageError
from runlens.testing import build_run, check_detector, odd_runs, run_detector

DOC = """Flags a loss above ``limit``.

What it detects:
    A loss above the limit.
Why it matters:
    It is a test detector.
How it decides:
    Compares each loss with ``limit``.
What to try:
    Nothing.
Parameters:
    limit: the highest loss that is fine.
"""


class _Good(Detector):
    __doc__ = DOC
    code, title, severity = "test_loss_above", "Loss above a limit", "warning"
    needs = Needs(scalars=("loss",), requires=("scalars.loss",))
    constraints = {"limit": Interval(float, 0, None)}

    def __init__(self, *, limit: float = 100.0) -> None:
        self.limit = limit

    def check(self, run, ctx):
        loss = run.column("scalars", "loss")
        above = np.flatnonzero(np.nan_to_num(loss, nan=0.0) > self.limit)
        if above.size:
            yield Finding(self.code, self.severity, self.title, step=int(run.steps("scalars")[above[0]]))


class _Positional(_Good):
    def __init__(self, limit: float = 100.0) -> None:
        self.limit = limit


class _Undocumented(_Good):
    __doc__ = "Flags a loss above a limit."


class _CrashesOnNaN(_Good):
    def check(self, run, ctx):
        loss = run.column("scalars", "loss")
        if np.isnan(loss).any():
            raise ValueError("NaN in the loss")
        yield from ()


class _Noisy(_Good):
    def __init__(self, *, limit: float = 0.0) -> None:
        self.limit = limit


_calls = iter(range(10**6))


class _Random(_Good):
    def check(self, run, ctx):
        if next(_calls) % 2:
            yield Finding(self.code, self.severity, self.title)


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_every_built_in_detector_passes_the_check(code):
    assert check_detector(REGISTRY[code]) == []


@pytest.mark.parametrize(("cls", "expected"), [
    (_Positional, "is not keyword-only"),
    (_Undocumented, "docstring lacks"),
    (_CrashesOnNaN, "crashes on a run with every value NaN"),
    (_Noisy, "on a healthy run"),
    (_Random, "not deterministic"),
])
def test_the_check_names_what_is_broken(cls, expected):
    problems = check_detector(cls)
    assert any(expected in p for p in problems), problems


def test_a_good_detector_passes_and_runs_after_its_dependencies():
    assert check_detector(_Good) == []
    outcome, found = run_detector(_Good(limit=2.0), build_run(loss=[1.0, 3.0, 1.0], steps=[10, 20, 30]))
    assert outcome.state == "ran" and [(f.code, f.step) for f in found] == [("test_loss_above", 20)]


def test_build_run_has_the_format_types_and_its_own_steps():
    run = build_run(loss=[2.0, 1.5], steps=[5, 7], lr=[0.1, 0.1], val_loss=[1.9], val_steps=[7],
                    layers={"grad_norm": np.ones((2, 3))}, layer_steps=[5, 7],
                    events=[{"step": 7, "kind": "user", "message": "m"}])
    assert run.steps("scalars").tolist() == [5, 7] and run.steps("evals").tolist() == [7]
    assert str(run.layers.schema.field("layer").type).startswith("dictionary")
    assert run.layers.num_rows == 6 and [m["name"] for m in run.meta["layers"]] == ["l0.weight", "l1.weight", "l2.weight"]
    assert run.events.column("kind").to_pylist() == ["user"]


def test_build_run_refuses_steps_that_do_not_match():
    with pytest.raises(UsageError, match="steps has 3 values for 2 rows"):
        build_run(loss=[1.0, 2.0], steps=[1, 2, 3])


def test_odd_runs_are_built_without_error():
    assert all(build().status in ("finished", "crashed") for build in odd_runs().values())
