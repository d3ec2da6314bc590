"""The held-out set's label criteria, on small synthetic series: each fires on its fault, not on its twin.

Training a run per fault is too slow for a test; the criteria are pure functions of the probe's arrays,
so they are tested on arrays made to the shape each fault has (and the probe itself on a tiny model).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.heldout import criteria as C

RNG = np.random.default_rng(0)


def run(n=400, start=1.1, end=0.4, noise=0.01, grad=1.0, **over):
    t = np.arange(n)
    loss = end + (start - end) * np.exp(-t / (n / 6)) + noise * RNG.standard_normal(n)
    vs = np.arange(19, n, 20)
    m = {"loss": loss, "grad_norm": np.full(n, grad) * (1 + 0.05 * RNG.standard_normal(n)),
         "grad_first": np.full(n, 0.5), "grad_last": np.full(n, 1.0), "update_ratio": np.full(n, 1e-3),
         "weight_norm": np.full(n, 10.0), "val_step": vs, "val_loss": loss[vs] + 0.02,
         "param_names": np.array(["a.weight", "a.bias", "b.weight"]), "param_max_update": np.array([1e-2, 1e-3, 1e-2]),
         "param_max_grad": np.array([1.0, 0.1, 1.0]), "param_is_matrix": np.array([True, False, True])}
    m.update(over)
    return m


def test_healthy_fires_on_a_falling_settling_run_and_not_on_a_flat_one():
    assert C.healthy(run(), {})[0]
    assert not C.healthy(run(end=1.05), {})[0]
    frozen = run(param_max_update=np.array([0.0, 1e-3, 1e-2]))
    ok, detail = C.healthy(frozen, {})
    assert not ok and detail["frozen"] == ["a.weight"]


def test_overfitting_needs_a_significant_rise_after_an_early_minimum():
    m = run(n=600, end=0.05)
    v = np.concatenate([np.linspace(1.0, 0.6, 6), np.linspace(0.6, 1.2, 24)]) + 0.01 * RNG.standard_normal(30)
    m["val_step"], m["val_loss"] = np.arange(19, 600, 20), v
    ok, detail = C.overfitting(m, {})
    assert ok and detail["slope_t_after_min"] > 3
    flat_val = dict(m, val_loss=np.linspace(1.0, 0.6, 30))
    assert not C.overfitting(flat_val, {})[0]


def test_underfitting_and_chance():
    flat = run(start=1.1, end=1.09)
    assert C.underfitting(flat, {})[0] and not C.underfitting(run(), {})[0]
    at_chance = run(start=3.0, end=math.log(3), noise=0.002)
    at_chance["val_loss"] = np.full(at_chance["val_step"].size, math.log(3) + 0.001)
    assert C.chance(at_chance, {"chance_k": 3})[0]
    assert not C.chance(at_chance, {"chance_k": 4})[0]


def test_learning_rate_criteria_compare_with_the_twin():
    jumpy = run(end=0.8)
    jumpy["val_loss"] = 0.8 + 0.2 * RNG.standard_normal(jumpy["val_step"].size) ** 2
    calm_twin = run(end=0.3)
    assert C.lr_too_high(jumpy, {"twin": calm_twin})[0]
    assert not C.lr_too_high(jumpy, {"twin": run(end=0.9)})[0]          # the twin is no better
    still = run(start=1.1, end=1.095)
    assert C.lr_too_low(still, {"twin": run()})[0]
    assert not C.lr_too_low(still, {"twin": run(start=1.1, end=1.09)})[0]  # a faster lr does not help
    assert not C.lr_too_low(still, {})[0]                                 # no twin: not confirmed


def test_diverged_by_nan_or_by_magnitude():
    nan = run()
    nan["loss"] = nan["loss"].copy()
    nan["loss"][300:] = np.nan
    assert C.diverged(nan, {})[0]
    big = run()
    big["loss"] = big["loss"] * np.logspace(0, 30, big["loss"].size)
    assert C.diverged(big, {})[0] and not C.diverged(run(), {})[0]


def test_gradient_criteria():
    vanish = run(start=1.1, end=1.09, grad_first=np.full(400, 1e-5), grad_last=np.full(400, 1.0))
    assert C.vanishing(vanish, {})[0]
    dead_first = dict(vanish, grad_first=np.zeros(400))
    assert not C.vanishing(dead_first, {})[0]                            # exactly zero is a dead layer
    assert not C.vanishing(run(), {})[0]
    grow = run(grad=1.0)
    grow["grad_norm"] = np.logspace(0, 5, 400)
    assert C.exploding(grow, {})[0] and not C.exploding(run(), {})[0]
    dead = run(param_max_update=np.array([0.0, 0.0, 1e-2]))
    ok, detail = C.dead_layer(dead, {})
    assert ok and detail["frozen"] == ["a.weight"] and not C.dead_layer(run(), {})[0]


def test_plateau_late_variance_and_spikes():
    loss = np.concatenate([np.full(200, 1.1), 0.4 + 0.7 * np.exp(-np.arange(200) / 30)])
    assert C.plateau(run(n=400, loss=loss), {"change_step": 200})[0]
    assert not C.plateau(run(n=400), {"change_step": 200})[0]
    noisy = run(noise=0.01)
    noisy["loss"] = noisy["loss"].copy()
    noisy["loss"][320:] += 0.2 * RNG.standard_normal(80)
    assert C.late_variance(noisy, {})[0] and not C.late_variance(run(), {})[0]
    spiky = run()
    spiky["loss"] = spiky["loss"].copy()
    spiky["loss"][[150, 300]] *= 5
    ok, detail = C.spikes(spiky, {})
    assert ok and detail["spike_steps"] == [150, 300]
    assert not C.spikes(run(), {})[0]


def test_crash_criterion_reads_the_generators_own_record():
    assert C.crash(run(), {"crash_at": 5, "raised": {"type": "RuntimeError", "step": 5}})[0]
    assert not C.crash(run(), {"crash_at": 5, "raised": {"type": "RuntimeError", "step": 6}})[0]
    assert not C.crash(run(), {"crash_at": 5, "raised": None})[0]


def test_probe_sees_a_parameter_left_out_of_the_optimizer():
    torch = pytest.importorskip("torch")
    from benchmarks.heldout.probe import Probe

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(list(model[2].parameters()), lr=0.1)  # the first layer is left out
    probe = Probe(model)
    for _ in range(5):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.randn(16, 4)), torch.randint(0, 2, (16,)))
        loss.backward()
        probe.after_backward()
        probe.before_step()
        opt.step()
        probe.after_step(float(loss.detach()))
    m = probe.arrays()
    assert C.frozen(m["param_names"], m["param_max_update"], m["param_max_grad"], m["param_is_matrix"]) == ["0.weight"]
    assert np.all(m["update_ratio"] > 0) and m["grad_first"].shape == (5,)
    assert m["grad_norm"][0] == pytest.approx(math.sqrt(sum(float(p.grad.norm()) ** 2 for p in model.parameters())),
                                              rel=0.5)
