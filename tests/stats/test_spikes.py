"""The one spike detector: each mode finds a planted spike and leaves a spike-free series alone."""

from __future__ import annotations

import numpy as np
import pytest

from runlens.stats.spikes import MODES, find_spikes


def _noisy_fall(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 2.0 * np.exp(-np.arange(n) / (n / 3)) + 0.3 + 0.01 * rng.standard_normal(n)


@pytest.mark.parametrize(("mode", "n", "kw"), [
    ("rolling", 600, {}), ("differences", 600, {}), ("short", 12, {"min_ratio": 3.0}),
    ("log10", 200, {"min_ratio": 100.0, "max_width": 3}),
])
def test_each_mode_finds_one_planted_spike(mode, n, kw):
    x = _noisy_fall(n)
    at = n // 2
    quiet = find_spikes(x, mode=mode, **kw)
    x[at] *= 1000.0 if mode == "log10" else 5.0
    found = find_spikes(x, mode=mode, **kw)
    assert quiet == []
    assert [s["index"] for s in found] == [at]
    assert found[0]["value"] == pytest.approx(x[at])
    assert found[0]["level"] < x[at] and found[0]["z"] > 6


def test_a_spike_that_stays_is_no_spike():
    x = _noisy_fall(600)
    x[300:] += 5.0  # a level shift: nothing comes back
    assert find_spikes(x) == []
    assert find_spikes(np.abs(x), mode="log10", min_ratio=2.0) == []


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="not one of"):
        find_spikes(np.ones(10), mode="bogus")
    assert "rolling" in MODES
