"""grad_norm_applied without a second pass over the gradients when nothing, or only one
clip_grad_norm_ / the GradScaler's unscale, changed them (recorders/_torch_applied.py); the pass
stays where the recorder cannot tell. The truth is the norm of the gradients measured in torch
right before optimizer.step(); the passes are counted at the recorder's norm functions."""

from __future__ import annotations

import gc
import math

import pytest
from recorder_testutil import read_table

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from recorders import _torch_applied  # noqa: E402
from recorders import _torch_norms as tn  # noqa: E402
from recorders.torch import Recorder  # noqa: E402

QUIET = {"handle_signals": False, "announce": False}
STEPS = 6


@pytest.fixture
def passes(monkeypatch):
    """Calls of the recorder's norm functions whose tensors are the model's current gradients."""
    counter = {"model": None, "n": 0}

    def counting(fn):
        def wrapped(*args, **kwargs):
            tensors = next(a for a in args if isinstance(a, (list, tuple)))
            grads = {id(p.grad) for p in counter["model"].parameters() if p.grad is not None}
            if any(id(t) in grads for t in tensors):
                counter["n"] += 1
            return fn(*args, **kwargs)
        return wrapped
    monkeypatch.setattr(tn.Layout, "l2", counting(tn.Layout.l2))
    monkeypatch.setattr(tn.Layout, "grad_stats", counting(tn.Layout.grad_stats))
    monkeypatch.setattr(tn.LocalNorms, "l2", staticmethod(counting(tn.l2_norms)))
    return counter


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))


def _global(model: nn.Module) -> float:
    return math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in model.parameters() if p.grad is not None))


def _between(model: nn.Module, how: str, scaler) -> None:
    """What the loop does to the gradients between backward and optimizer.step()."""
    if how == "scaler_clip":
        scaler.unscale_(model.opt)
        nn.utils.clip_grad_norm_(model.parameters(), 0.05)
    elif how == "clip":
        nn.utils.clip_grad_norm_(model.parameters(), 0.05)  # always clips here
    elif how == "clip_loose":
        nn.utils.clip_grad_norm_(model.parameters(), 1e6)  # never clips: factor 1
    elif how == "other_model":  # another model's gradients: ours are untouched
        model.twin(torch.randn(4, 6)).sum().backward()
        nn.utils.clip_grad_norm_(model.twin.parameters(), 0.01)
    elif how == "clip_subset":
        nn.utils.clip_grad_norm_(model[0].parameters(), 0.01)
    elif how == "clip_twice":
        nn.utils.clip_grad_norm_(model.parameters(), 0.05)
        nn.utils.clip_grad_norm_(model.parameters(), 0.01)
    elif how == "in_place":
        for p in model.parameters():
            p.grad.mul_(0.5)
    elif how == "reassigned":
        for p in model.parameters():
            p.grad = p.grad * 0.5


def _train(run, how: str, layers_every: int, passes) -> tuple[Recorder, list[float], list[int]]:
    model = _model()
    model.opt = opt = torch.optim.SGD(model.parameters(), lr=0.1)
    object.__setattr__(model, "twin", nn.Linear(6, 2))  # not a submodule: not recorded
    scaler = (torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=1000)
              if how.startswith("scaler") else None)
    told = None if how == "scaler_untold" else scaler  # a loop that does not hand its scaler to the recorder
    passes["model"] = model
    truth, counts = [], []
    # The truth: the gradients as optimizer.step() sees them (after GradScaler.step unscaled them).
    opt.register_step_pre_hook(lambda *_: truth.append(_global(model)))
    with Recorder(run, model, opt, layers_every=layers_every, scaler=told, **QUIET) as rec:
        for _ in range(STEPS):
            passes["n"] = 0
            opt.zero_grad()
            loss = model(torch.randn(32, 6)).pow(2).mean()
            (scaler.scale(loss) if scaler else loss).backward()
            _between(model, how, scaler)
            if scaler:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            rec.step(loss)
            counts.append(passes["n"])
    return rec, truth, counts


@pytest.mark.parametrize("layers_every", [1, 2])
@pytest.mark.parametrize(("how", "per_step"), [
    ("nothing", 1), ("other_model", 1), ("clip", 1), ("clip_loose", 1), ("scaler", 1), ("scaler_clip", 1),
    ("clip_subset", 2), ("clip_twice", 2), ("in_place", 2), ("reassigned", 2), ("scaler_untold", 2)])
def test_applied_norm_and_gradient_passes_per_step(tmp_path, passes, how, per_step, layers_every):
    rec, truth, counts = _train(tmp_path / "run", how, layers_every, passes)
    # The shortcut is confirmed against the pass on the first step it applies to (one pass more, once);
    # an untold scaler's unscale makes them disagree, and the pass stays from then on.
    first = per_step + 1 if per_step == 1 else per_step
    assert counts == [first] + [per_step] * (STEPS - 1)
    s = read_table(rec.run_dir, "scalars").sort_by("step").to_pydict()
    assert s["grad_norm_applied"] == pytest.approx(truth, rel=1e-6)
    if how in ("clip", "scaler_clip", "clip_twice"):  # clipping really ran: the two columns differ
        assert all(a < 0.99 * g for a, g in zip(s["grad_norm_applied"], s["grad_norm"], strict=True))
    if how in ("nothing", "other_model", "clip_loose", "scaler"):
        assert s["grad_norm_applied"] == pytest.approx(s["grad_norm"], rel=1e-12)


def test_clip_grad_norm_is_torch_again_after_close(tmp_path):
    gc.collect()  # recorders other tests left unclosed and unreachable leave the set of open ones
    others = len(_torch_applied._LIVE)
    original = _torch_applied._ORIGINAL.get("fn", torch.nn.utils.clip_grad_norm_)
    model = _model()
    rec = Recorder(tmp_path / "run", model, torch.optim.SGD(model.parameters(), lr=0.1), **QUIET)
    wrapped = torch.nn.utils.clip_grad_norm_
    assert wrapped is not original and torch.nn.utils.clip_grad.clip_grad_norm_ is wrapped
    model(torch.randn(4, 6)).sum().backward()
    twin = [p.grad.clone() for p in model.parameters()]
    total = wrapped(model.parameters(), 0.01)
    assert isinstance(total, torch.Tensor)
    assert float(total) == pytest.approx(math.sqrt(sum(float(g.double().pow(2).sum()) for g in twin)), rel=1e-6)
    rec.close()
    assert rec._math.watch not in _torch_applied._LIVE
    if not others:
        assert torch.nn.utils.clip_grad_norm_ is original
        assert torch.nn.utils.clip_grad.clip_grad_norm_ is original
    # A caller that kept the wrapper still clips like torch.
    for p, g in zip(model.parameters(), twin, strict=True):
        p.grad = g.clone()
    assert float(wrapped(model.parameters(), 0.01)) == pytest.approx(float(total), rel=1e-7)


def test_a_step_without_gradients_has_no_applied_norm(tmp_path):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(tmp_path / "run", model, opt, **QUIET) as rec:
        for step in range(3):
            opt.zero_grad(set_to_none=True)
            loss = model(torch.randn(4, 6)).pow(2).mean()
            if step != 1:  # step 1 steps the optimizer with no gradient at all
                loss.backward()
            opt.step()
            rec.step(loss)
    s = read_table(rec.run_dir, "scalars").sort_by("step").to_pydict()
    assert [g is None for g in s["grad_norm_applied"]] == [False, True, False]
