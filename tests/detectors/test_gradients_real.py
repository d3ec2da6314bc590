"""The gradient and weight detectors on small real PyTorch runs, recorded
through ``recorders.torch.Recorder`` and read back from disk.

Each run is a few hundred CPU steps of a tiny model on a synthetic task,
one per failure it is built to show, plus healthy twins that must stay
silent. Recorded once per module. Their outcomes do not hang on float details (the same verdicts
on every seed), so they train here; each run must still show its fault (or, for a healthy twin,
none) in torch before its verdict is looked at, else the next seed is tried (``real_training``).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from real_training import (  # noqa: E402
    TRIES,
    barely_moves,
    diagnose_scenarios,
    explodes,
    faultless,
    frozen_first,
    vanishes,
    warning_codes,
    weights_grow,
)
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

OURS = ("vanishing_gradients", "exploding_gradients", "dead_layers", "learning_rate_too_low",
        "weight_norm_growth")


def _data(seed=0, n=2048, d=32, k=10):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = (torch.tanh(x @ torch.randn(d, 64, generator=g)) @ torch.randn(64, k, generator=g)).argmax(1)
    return x, y


def _mlp(widths, act=nn.ReLU):
    layers = []
    for a, b in zip(widths[:-1], widths[1:], strict=True):
        layers += [nn.Linear(a, b), act()]
    return nn.Sequential(*layers[:-1])


def _clf(x, y, bs=64):
    def fn(model, g):
        idx = torch.randint(0, len(x), (bs,), generator=g)
        return F.cross_entropy(model(x[idx]), y[idx])
    return fn


def _scenarios():
    # The regression data come from the global generator: seed it, or the runs (and whether
    # "exploding" explodes) depend on which tests used torch before this module.
    torch.manual_seed(0)
    x, y = _data()
    xr = torch.randn(1024, 16)
    yr = xr @ torch.randn(16, 1)

    def mse(model, g):
        idx = torch.randint(0, 1024, (64,), generator=g)
        return F.mse_loss(model(xr[idx]), yr[idx])

    def unbounded(model, g):  # rewards scale: nothing stops the weights growing
        idx = torch.randint(0, 1024, (64,), generator=g)
        return -model(xr[idx]).mean()

    def healthy_adam():
        m = _mlp([32, 128, 64, 10])
        return m, torch.optim.Adam(m.parameters(), 1e-3), 200, _clf(x, y)

    def healthy_sgd():
        m = _mlp([32, 128, 128, 64, 10])
        return m, torch.optim.SGD(m.parameters(), 0.05, momentum=0.9), 200, _clf(x, y)

    def healthy_deep_relu():
        m = _mlp([32] + [64] * 8 + [10])
        return m, torch.optim.AdamW(m.parameters(), 1e-3), 200, _clf(x, y)

    def vanishing():
        m = _mlp([32] + [64] * 10 + [10], act=nn.Sigmoid)
        return m, torch.optim.SGD(m.parameters(), 0.1), 150, _clf(x, y)

    def too_low():
        m = _mlp([32, 128, 64, 10])
        return m, torch.optim.Adam(m.parameters(), 1e-7), 200, _clf(x, y)

    def dead():
        m = _mlp([32, 128, 64, 10])
        return m, torch.optim.Adam(list(m.parameters())[2:], 1e-3), 150, _clf(x, y)

    def exploding():
        m = _mlp([16, 64, 64, 1])
        return m, torch.optim.SGD(m.parameters(), 0.5), 100, mse

    def growth():
        m = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))
        return m, torch.optim.Adam(m.parameters(), 0.02), 300, unbounded

    return {f.__name__: f for f in (healthy_adam, healthy_sgd, healthy_deep_relu, vanishing, too_low, dead,
                                    exploding, growth)}


# What each run must show in torch before its verdict is looked at (real_training's truths).
TRUTHS = {"healthy_adam": faultless, "healthy_sgd": faultless, "healthy_deep_relu": faultless, "vanishing": vanishes,
          "too_low": barely_moves, "dead": frozen_first, "exploding": explodes, "growth": weights_grow}


@pytest.fixture(scope="module")
def diagnoses(tmp_path_factory):
    """``diagnoses(name)``: the scenario's diagnosis, once its run showed its truth in torch."""
    trained = diagnose_scenarios(tmp_path_factory.mktemp("real"), _scenarios(), TRUTHS)
    return lambda name: trained[name].checked()


def _codes(diag):
    return warning_codes(diag, OURS)


@pytest.mark.parametrize("name", ["healthy_adam", "healthy_sgd", "healthy_deep_relu"])
def test_healthy_runs_are_silent(diagnoses, name):
    assert _codes(diagnoses(name)) == set()


@pytest.mark.parametrize("name, code", [
    ("vanishing", "vanishing_gradients"),
    ("too_low", "learning_rate_too_low"),
    ("dead", "dead_layers"),
    ("exploding", "exploding_gradients"),
    ("growth", "weight_norm_growth"),
])
def test_each_failure_is_named(diagnoses, name, code):
    assert code in _codes(diagnoses(name)), [f.title for f in diagnoses(name).findings]


def test_vanishing_is_not_also_a_low_learning_rate(diagnoses):
    assert "learning_rate_too_low" not in _codes(diagnoses("vanishing"))
    assert "vanishing_gradients" not in _codes(diagnoses("too_low"))


def test_dead_layer_names_the_layer_left_out(diagnoses):
    [f] = [f for f in diagnoses("dead").findings if f.code == "dead_layers"]
    assert set(f.layers) == {"0.weight", "0.bias"}


def test_a_run_without_its_truth_is_retrained_at_the_next_seed_and_never_judged(tmp_path):
    calls = []

    def second_try(m):
        calls.append(m["loss"].size)
        return len(calls) >= 2, {"tries": len(calls)}

    def tiny():
        m = nn.Linear(4, 2)
        return m, torch.optim.SGD(m.parameters(), 0.1), 5, lambda model, g: model(torch.randn(8, 4, generator=g)).pow(
            2).mean()

    out = diagnose_scenarios(tmp_path, {"late": tiny, "never": tiny},
                             {"late": second_try, "never": lambda m: (False, {"why": "not shown"})})
    assert (out["late"].seed, out["late"].shown) == (1, True) and calls == [5, 5]
    assert out["late"].checked() is out["late"].diagnosis is not None
    assert (out["never"].seed, out["never"].shown, out["never"].diagnosis) == (TRIES - 1, False, None)
    with pytest.raises(AssertionError, match=f"no seed in {TRIES} showed"):
        out["never"].checked()
