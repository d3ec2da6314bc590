"""The third generator's curve labels (``benchmarks/third/truth.py``): graded only where its measurements
settle them, in the format's words (``docs/format.md``)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.third.truth import curve_of


def _loss(*levels: float, n: int = 400, noise: float = 0.02, seed: int = 0) -> np.ndarray:
    """A loss that moves linearly through ``levels`` over ``n`` steps, with relative noise."""
    rng = np.random.default_rng(seed)
    x = np.interp(np.linspace(0, 1, n), np.linspace(0, 1, len(levels)), levels)
    return x * (1 + noise * rng.standard_normal(n))


def test_a_non_finite_loss_is_diverged():
    x = _loss(2.3, 1.0)
    x[300] = np.nan
    assert curve_of({"loss": x}) == ["diverged"]


@pytest.mark.parametrize("seed", range(3))
def test_a_loss_that_never_moved_is_underfitting(seed):
    assert curve_of({"loss": _loss(2.3, 2.3, seed=seed)}) == ["underfitting"]


def test_a_loss_that_fell_is_not_graded_here():
    assert curve_of({"loss": _loss(2.3, 0.5)}) is None


@pytest.mark.parametrize("levels", [(1.5, 0.3, 8.0), (2.3, 30.0, 25.0), (1.5, 1.6, 3.0)])
def test_a_loss_that_rose_above_its_start_is_not_underfitting(levels):
    # "Barely moves from the start" is the format's underfitting; a loss that fell and came back far
    # above where it began, or rose at once, grew: diverged or unstable, which is not settled here.
    assert curve_of({"loss": _loss(*levels)}) is None


def test_a_loss_that_blew_up_on_its_first_steps_is_measured_from_its_first_value():
    # The first twentieth already holds the blow-up (230 -> 50,000 at step 2), so it alone would call
    # the flat remainder "no progress"; the first loss is where the run started.
    x = _loss(5e4, 5e4, n=400)
    x[0] = 230.0
    assert curve_of({"loss": x}) is None
