"""The spike readings: each finds a planted spike and leaves a spike-free series alone."""

from __future__ import annotations

import numpy as np
import pytest

from runlens.stats.spikes import (
    ROLLING_DEFAULTS,
    difference_spikes,
    log10_spikes,
    rolling_spikes,
    short_spikes,
)


def _noisy_fall(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 2.0 * np.exp(-np.arange(n) / (n / 3)) + 0.3 + 0.01 * rng.standard_normal(n)


@pytest.mark.parametrize(("find", "n", "kw"), [
    (rolling_spikes, 600, {}), (difference_spikes, 600, {}), (short_spikes, 12, {"min_ratio": 3.0}),
    (log10_spikes, 200, {"min_ratio": 100.0, "max_width": 3}),
])
def test_each_reading_finds_one_planted_spike(find, n, kw):
    x = _noisy_fall(n)
    at = n // 2
    quiet = find(x, **kw)
    x[at] *= 1000.0 if find is log10_spikes else 5.0
    found = find(x, **kw)
    assert quiet == []
    assert [s["index"] for s in found] == [at]
    assert found[0]["value"] == pytest.approx(x[at])
    assert found[0]["level"] < x[at] and found[0]["z"] > 6


def test_a_spike_that_stays_is_no_spike():
    x = _noisy_fall(600)
    x[300:] += 5.0  # a level shift: nothing comes back
    assert rolling_spikes(x) == []
    assert log10_spikes(np.abs(x), min_ratio=2.0) == []


def test_a_reading_takes_only_its_own_parameters():
    # One function per reading: a parameter of another (a window for the rolling loss) is refused,
    # where one function with four modes accepted and ignored it.
    with pytest.raises(TypeError):
        rolling_spikes(np.ones(10), window=25)
    with pytest.raises(TypeError):
        short_spikes(np.ones(10), recovery=20)
    assert set(ROLLING_DEFAULTS) == {"z_min", "tail_factor", "min_rise", "min_progress", "max_width", "recovery"}
