"""grad_norm_spike: a one-step spike of the global gradient norm, against noise, lasting level changes,
start transients and logs of a dozen lines; firing cases with their silent twins."""

from __future__ import annotations

import numpy as np
import pytest
from grad_norm_runs import noisy, with_grad_norm
from gradients_synth import check

from runlens.detectors import Skip


@pytest.mark.parametrize("seed", range(10))
def test_an_isolated_1000x_spike_is_flagged(seed):
    n = 500
    gn = noisy(np.zeros(n), n, seed)
    gn[250] *= 1000
    [f] = check("grad_norm_spike", with_grad_norm(gn, seed=seed))
    assert f.step == 250 and f.evidence["ratio"] >= 300 and f.evidence["spikes"] == 1


@pytest.mark.parametrize("seed", range(10))
def test_no_spike_in_heavy_noise_or_a_lasting_level_change(seed):
    n = 500
    assert check("grad_norm_spike", with_grad_norm(noisy(np.zeros(n), n, seed, sd=0.4), seed=seed)) == []
    step = noisy(np.where(np.arange(n) < 250, 0.0, 3.0), n, seed)
    assert check("grad_norm_spike", with_grad_norm(step, seed=seed)) == []


def test_spike_in_a_dozen_line_log_says_how_few_points():
    gn = noisy(np.zeros(12), 12, 0)
    gn[6] *= 1000
    [f] = check("grad_norm_spike", with_grad_norm(gn))
    assert f.evidence["points"] == 12 and "only 12 points" in f.title
    gn[6] /= 1000
    assert check("grad_norm_spike", with_grad_norm(gn)) == []


def test_spike_needs_a_few_points():
    with pytest.raises(Skip, match="at least 4"):
        check("grad_norm_spike", with_grad_norm(np.array([1.0, 1e3, 1.0])))


@pytest.mark.parametrize("seed", range(5))
def test_a_start_transient_of_a_long_run_is_no_spike(seed):
    n = 5000
    # the first steps sit 30-300x above the level the run settles at: a start transient, not a spike
    level = np.r_[[2.0, 1.5, 1.5, 2.5], np.zeros(n - 4)]
    assert check("grad_norm_spike", with_grad_norm(noisy(level, n, seed), seed=seed)) == []
