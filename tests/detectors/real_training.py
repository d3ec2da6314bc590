"""What the real-run gradient tests share: train a scenario through the public recorder, measure in
torch what the run really did, analyze it back from disk, and read the warning-or-worse codes of a
family of detectors.

These runs train at test time (the recorder -> disk -> engine path stays exercised), so each
scenario states its ground truth in torch measurements, fixed before any run was analyzed and
never read from a detector: the held-out generator's criteria (``benchmarks/heldout/criteria.py``)
where they apply, a stated measurement otherwise. A scenario whose run does not show its truth
on this machine is retrained at the next seed (up to ``TRIES``); the tests look at a verdict only
once the truth holds, so a run that ends up elsewhere on other float kernels can never turn into
a false verdict failure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from benchmarks.heldout import criteria
from recorders.torch import Recorder
from runlens.analysis import analyze

TRIES = 3
Measured = dict[str, np.ndarray]


def train(path, model, opt, steps, loss_fn, seed=0, *, stop_on_nonfinite=False) -> Measured:
    """``steps`` optimizer steps of ``loss_fn(model, generator)``, recorded into ``path``; what torch saw.

    Measured after backward, before the optimizer step: the loss, the global gradient norm, the
    gradient norms of the first and last weight matrices (registration order); after the step:
    the weight norm. ``moved``/``got_grad``: per parameter, whether it ever changed / had a gradient.
    """
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    params = list(model.parameters())
    mats = [i for i, p in enumerate(params) if p.dim() > 1]
    start = [p.detach().clone() for p in params]
    got_grad = np.zeros(len(params), dtype=bool)
    rows: dict[str, list[float]] = {"loss": [], "grad_norm": [], "grad_first": [], "grad_last": [], "weight_norm": []}
    with Recorder(path, model, opt, config={"test": path.name}, seed=seed, handle_signals=False) as rec:
        for _ in range(steps):
            opt.zero_grad()
            loss = loss_fn(model, g)
            loss.backward()
            with torch.no_grad():
                norms = [float(p.grad.norm()) if p.grad is not None else 0.0 for p in params]
            got_grad |= np.array([p.grad is not None and n > 0 for p, n in zip(params, norms, strict=True)])
            opt.step()
            rec.step(loss)
            with torch.no_grad():
                weight = math.sqrt(sum(float(p.norm()) ** 2 for p in params))
            for key, value in (("loss", float(loss.detach())), ("grad_norm", math.sqrt(sum(n * n for n in norms))),
                               ("grad_first", norms[mats[0]]), ("grad_last", norms[mats[-1]]),
                               ("weight_norm", weight)):
                rows[key].append(value)
            if stop_on_nonfinite and not torch.isfinite(loss):
                break
    moved = np.array([bool((p.detach() != s).any()) for p, s in zip(params, start, strict=True)])
    return {**{k: np.array(v) for k, v in rows.items()}, "moved": moved, "got_grad": got_grad,
            "is_matrix": np.array([p.dim() > 1 for p in params])}


# -- ground truths, in torch measurements ----------------------------------------------------------

Truth = Callable[[Measured], tuple[bool, dict]]


def faultless(m: Measured) -> tuple[bool, dict]:
    """A healthy control shows none of the faults below: finite, the gradient norm under 1000x its
    early median, the first matrix's gradient > 1e-3 of the last's, every matrix that gets gradients
    moves, the loss moves >= 5%, the weight norm ends < 10x its start."""
    checks = {"explodes": explodes(m), "vanishing_ratio": (criteria.depth_ratio(m["grad_first"], m["grad_last"])
                                                           <= 1e-3, {}),
              "frozen": frozen(m), "barely_moves": barely_moves(m), "weights_grow": weights_grow(m)}
    finite = bool(np.isfinite(m["loss"]).all())
    return finite and not any(shown for shown, _ in checks.values()), {
        "finite": finite, **{k: shown for k, (shown, _) in checks.items()},
        "relative_fall": criteria.relative_fall(m["loss"])}


def vanishes(m: Measured) -> tuple[bool, dict]:
    """The gradient half of the generator's vanishing criterion: the first matrix's gradient is
    <= 1e-3 of the last one's (median over steps) and never exactly zero."""
    ratio = criteria.depth_ratio(m["grad_first"], m["grad_last"])
    first = m["grad_first"][np.isfinite(m["grad_first"])]
    return ratio <= 1e-3 and bool(np.all(first > 0)), {"first_over_last": ratio}


def barely_moves(m: Measured) -> tuple[bool, dict]:
    """The generator's too-low-rate criterion on the run itself: the loss moves < 5%."""
    fall = criteria.relative_fall(m["loss"])
    return abs(fall) < 0.05, {"relative_fall": fall}


def frozen(m: Measured) -> tuple[bool, dict]:
    """Some weight matrix gets gradients but never moves."""
    idx = [i for i, (mat, grad, mv) in enumerate(zip(m["is_matrix"], m["got_grad"], m["moved"], strict=True))
           if mat and grad and not mv]
    return bool(idx), {"frozen_params": idx}


def frozen_first(m: Measured) -> tuple[bool, dict]:
    """The generator's dead-layer criterion: a matrix never moves while the loss still falls >= 20%."""
    shown, detail = frozen(m)
    fall = criteria.relative_fall(m["loss"])
    return shown and fall >= 0.2, {**detail, "relative_fall": fall}


def explodes(m: Measured) -> tuple[bool, dict]:
    """The gradient norm grows >= 1000x its early median (the generator's criterion) or overflows."""
    g = m["grad_norm"]
    grow, overflow = criteria.growth(g), bool(not np.isfinite(g).all())
    return overflow or grow >= 1e3, {"grad_growth": grow, "overflowed": overflow}


def weights_grow(m: Measured) -> tuple[bool, dict]:
    """The weight norm ends >= 10x its start."""
    w = m["weight_norm"]
    ratio = float(w[-1] / w[0])
    return ratio >= 10, {"weight_norm_end_over_start": ratio}


def one_step_spike(at: int) -> Truth:
    """Step ``at``'s gradient norm is >= 100x every one of the 50 steps before it, and the 20 steps
    after it are back under a tenth of it (a spike, not a new level)."""
    def truth(m: Measured) -> tuple[bool, dict]:
        g = m["grad_norm"]
        before, after = float(g[at - 50:at].max()), float(np.median(g[at + 1:at + 21]))
        return g[at] >= 100 * before and g[at] >= 10 * after, {"over_before": float(g[at] / before),
                                                               "over_after": float(g[at] / after)}
    return truth


# -- training the scenarios ------------------------------------------------------------------------

@dataclass(frozen=True)
class Trained:
    """A scenario's run at the first seed whose measurements showed its truth, or the last one tried."""

    name: str
    seed: int
    truth: dict
    shown: bool
    diagnosis: object

    def checked(self):
        """The diagnosis, once the run showed its truth in torch (else the test fails saying so)."""
        assert self.shown, f"{self.name}: no seed in {TRIES} showed the scenario's truth in torch: {self.truth}"
        return self.diagnosis


def diagnose_scenarios(root, scenarios, truths: dict[str, Truth], **train_kw) -> dict[str, Trained]:
    """Every scenario (``make() -> (model, opt, steps, loss_fn)``) trained, on one thread, at the first
    seed whose measurements show ``truths[name]``, and analyzed from disk."""
    torch.set_num_threads(1)
    out = {}
    for name, make in scenarios.items():
        for seed in range(TRIES):
            torch.manual_seed(seed)
            model, opt, steps, loss_fn = make()
            path = root / f"{name}-seed{seed}"
            shown, detail = truths[name](train(path, model, opt, steps, loss_fn, seed, **train_kw))
            out[name] = Trained(name, seed, detail, shown, analyze(path) if shown else None)
            if shown:
                break
    return out


def warning_codes(diag, ours) -> set[str]:
    """The codes among ``ours`` that ``diag`` reports at warning or error."""
    return {f.code for f in diag.findings if f.code in ours and f.severity in ("warning", "error")}
