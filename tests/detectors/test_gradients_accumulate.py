"""``gradients_accumulate``: a gradient norm growing with the steps since the last reset (missing zero_grad)."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import healthy, make_run, noise
from verdict_fixtures import TRUTH, analysed, codes

from runlens.analysis import analyze, run_detector
from runlens.detectors import Context
from runlens.detectors.gradients_accumulate import GradientsAccumulate
from runlens.io.loader import load_run


def found(run, det=None):
    outcome, findings = run_detector(det or GradientsAccumulate(), run, Context())
    assert outcome.state == "ran", outcome
    return findings


@pytest.mark.parametrize("seed", range(5))
def test_a_norm_growing_with_the_steps_while_the_loss_stays_flat_fires(seed):
    rng = np.random.default_rng(seed)
    t = np.arange(1, 301)
    g = 0.5 * t * np.exp(0.05 * rng.standard_normal(t.size))
    (f,) = found(make_run(noise(300, seed, level=1.6, sd=0.05), scalars={"grad_norm": g}))
    assert f.severity == "error" and f.evidence["r2"] > 0.9 and f.evidence["n_points"] == 300


def test_a_sawtooth_cleared_once_per_epoch_fires_on_the_steps_since_each_reset():
    rng = np.random.default_rng(0)
    t = np.arange(400) % 50 + 1
    g = 0.3 * t * np.exp(0.05 * rng.standard_normal(t.size))
    (f,) = found(make_run(noise(400, 0, level=1.6, sd=0.05), scalars={"grad_norm": g}))
    assert f.evidence["resets"] == 7


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_a_steady_norm_on_the_same_flat_loss(seed):
    rng = np.random.default_rng(seed)
    g = 0.5 * np.exp(0.2 * rng.standard_normal(300))
    assert found(make_run(noise(300, seed, level=1.6, sd=0.05), scalars={"grad_norm": g})) == []


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_a_norm_rising_threefold_while_a_healthy_loss_falls(seed):
    # Healthy runs do see their gradient norm rise (warmup, sharpening): the loss improves, and the
    # rise is no power law of the steps from the first step on.
    rng = np.random.default_rng(seed)
    g = (1 + 2 * np.linspace(0, 1, 2000)) * np.exp(0.2 * rng.standard_normal(2000))
    assert found(make_run(healthy(2000, seed), scalars={"grad_norm": g})) == []


def test_recorded_run_without_zero_grad_fires_and_its_twin_does_not():
    assert TRUTH["zero_grad_missing"]["label"] == "gradients_accumulate"
    assert TRUTH["zero_grad_ok"]["label"] == "healthy_gradients"
    assert "gradients_accumulate" in codes(analysed("zero_grad_missing"), "error")
    assert "gradients_accumulate" not in codes(analysed("zero_grad_ok"))


def test_silent_twin_a_layer_left_out_of_the_optimizer_piles_up_its_gradient_harmlessly():
    # zero_grad clears only the optimizer's parameters: the excluded layer's gradient grows with the
    # steps (and dominates the global norm), while the updated layers' stay steady.
    import pyarrow as pa

    rng = np.random.default_rng(0)
    steps = np.arange(300)
    names = ["0.weight", "1.weight", "2.weight"]
    grad = np.stack([0.5 * (steps + 1), np.exp(0.1 * rng.standard_normal(300)),
                     np.exp(0.1 * rng.standard_normal(300))], axis=1)
    update = np.stack([np.zeros(300), np.full(300, 1e-3), np.full(300, 1e-3)], axis=1)
    table = pa.table({"step": np.repeat(steps, 3), "layer": np.tile(names, 300),
                      "grad_norm": grad.reshape(-1), "weight_norm": np.ones(900), "update_norm": update.reshape(-1)})
    meta = {"name": "s", "layers": [{"name": n, "index": i, "module": str(i), "kind": "Linear", "shape": [4, 4],
                                     "numel": 16} for i, n in enumerate(names)]}
    run = make_run(healthy(300, 0), layers=table, meta=meta, scalars={"grad_norm": np.sqrt((grad ** 2).sum(1))})
    assert found(run) == []
    # Its firing twin: the same pile-up in an updated layer.
    update[:, 0] = 1e-3
    table = table.set_column(4, "update_norm", pa.array(update.reshape(-1)))
    x = 1.6 + 0.05 * rng.standard_normal(300)
    assert found(make_run(x, layers=table, meta=meta, scalars={"grad_norm": np.sqrt((grad ** 2).sum(1))}))


def _levels_off(seed: int, n: int = 300, onset: int = 30, start: float = 0.6) -> np.ndarray:
    """A sum from step 0 that grows by the step count for ``onset`` steps, then levels off (an
    adaptive optimizer moving the weights along the stale sum), as the third set's mixer did."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1)
    return start * np.minimum(t, onset) * (1 + 0.2 * np.log1p(np.maximum(t - onset, 0) / onset)) \
        * np.exp(0.03 * rng.standard_normal(n))


@pytest.mark.parametrize("seed", range(5))
def test_a_sum_that_levels_off_after_its_onset_fires_on_the_onset(seed):
    (f,) = found(make_run(healthy(300, seed), scalars={"grad_norm": _levels_off(seed)}))
    assert f.evidence["onset_only"] is True and 16 <= f.evidence["n_points"] <= 64, f.evidence
    assert 0.8 <= f.evidence["power"] <= 1.2


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_the_same_level_reached_without_the_onset_law(seed):
    # The same norms after the onset, with a steady start: a norm that settles at a higher level
    # (a healthy net leaving its initialization) grows by no power of the steps from the first one.
    g = _levels_off(seed)
    g[:30] = g[30] * np.exp(0.1 * np.random.default_rng(seed).standard_normal(30))
    assert found(make_run(healthy(300, seed), scalars={"grad_norm": g})) == []



torch = pytest.importorskip("torch")


def _recorded_loop(path, clear, *, steps=60):
    """A classifier trained on fixed data with the recorder; ``clear(opt, model)`` is the loop's clearing."""
    from recorders.torch import Recorder

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(512, 8), torch.randint(0, 4, (512,))
    rec = Recorder(path, model=model, optimizer=opt, config={"num_classes": 4}, announce=False)
    for step in range(steps):
        i = step % 16
        if clear is not None:
            clear(opt, model)
        loss = torch.nn.functional.cross_entropy(model(x[i * 32:(i + 1) * 32]), y[i * 32:(i + 1) * 32])
        loss.backward()
        opt.step()
        rec.step(loss)
    rec.close()
    return path


def _data_zero(opt, model):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.data.zero_()  # the old idiom: bypasses the version counter the recorder reads


def test_recorded_loop_without_zero_grad_fires_from_the_recorders_reading(tmp_path):
    path = _recorded_loop(tmp_path / "run", None)
    (f,) = found(load_run(path))
    assert f.evidence["source"] == "scalars.grad_not_cleared"
    assert f.evidence["not_cleared"] == f.evidence["checked"] == 59 and f.evidence["growth"] >= 2
    assert analyze(path).findings[0].code == "gradients_accumulate"


@pytest.mark.parametrize("clear", [lambda opt, model: opt.zero_grad(),
                                   lambda opt, model: opt.zero_grad(set_to_none=False), _data_zero],
                         ids=["zero_grad", "set_to_none_false", "grad_data_zero"])
def test_silent_twin_recorded_loop_that_clears(tmp_path, clear):
    path = _recorded_loop(tmp_path / "run", clear)
    assert found(load_run(path)) == []
