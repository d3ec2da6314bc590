"""clipping_removes_updates: the applied norm a tiny share of the pre-clip norm on most steps."""

from __future__ import annotations

import numpy as np
import pytest
from bug_fixtures import assert_fixed_twin_silent, leading_finding
from gradients_synth import check
from loss_synth import healthy, make_run

from runlens.detectors import Skip


def test_real_run_names_the_bug_first_and_leads_its_symptoms():
    diag, f = leading_finding("clipping_removes_updates-autoencoder", "clipping_removes_updates")
    assert f.evidence["median_kept"] < 1e-2
    for symptom in diag.findings[1:]:
        if symptom.code in ("learning_rate_too_low", "underfitting", "unstable"):
            assert "clipping_removes_updates" in symptom.evidence["caused_by"]


def test_real_fixed_twin_is_silent():
    assert_fixed_twin_silent("clipping_removes_updates-autoencoder-fixed", "clipping_removes_updates")


def _run(pre, applied=None, config=None):
    n = len(pre)
    scalars = {"grad_norm": pre, **({"grad_norm_applied": applied} if applied is not None else {})}
    return make_run(healthy(n, 0), scalars=scalars, meta={"config": config or {}})


def test_tiny_applied_norm_fires():
    pre = np.exp(np.random.default_rng(0).normal(0, 0.3, 300))
    [f] = check("clipping_removes_updates", _run(pre, np.minimum(pre, 1e-4)))
    assert f.evidence["decades_removed"] > 3


def test_config_clip_norm_far_below_the_gradients_fires():
    pre = np.exp(np.random.default_rng(0).normal(0, 0.3, 300))
    [f] = check("clipping_removes_updates", _run(pre, config={"max_grad_norm": 1e-4}))
    assert f.evidence["source"].startswith("config.max_grad_norm")


@pytest.mark.parametrize("clip", [1.0, 0.3])
def test_ordinary_clipping_is_silent(clip):
    """Clipping at 1.0 (or below the median norm by a few times) removes part of some updates, not all."""
    pre = np.exp(np.random.default_rng(0).normal(0, 0.5, 300))
    assert check("clipping_removes_updates", _run(pre, np.minimum(pre, clip))) == []


def test_spikes_clipped_hard_are_silent():
    pre = np.ones(300)
    pre[::20] = 1e4  # a clip of 1 removes nearly all of these few steps only
    assert check("clipping_removes_updates", _run(pre, np.minimum(pre, 1.0))) == []


def test_without_applied_norm_or_clip_it_skips():
    with pytest.raises(Skip, match="clip"):
        check("clipping_removes_updates", _run(np.ones(100)))
