"""The curve's diverged label: a non-finite loss, a NaN masked as 0, a blow-up, unbounded growth.

``masked_nan`` and ``ended_exploding`` are pure functions of arrays and signal
series (``nonfinite_loss`` reads the first too); :func:`diverged` and
:func:`ended_exploding_verdict` turn them, and the growth after the minimum,
into a verdict; :class:`~runlens.detectors.curve.CurveClassifier` documents the rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors.crash.decode import decode
from runlens.detectors.curve.features import curve_evidence as _ev
from runlens.detectors.curve.features import memo, role_how
from runlens.detectors.curve.params import CurveParams
from runlens.diagnosis import CurveVerdict
from runlens.io.importers._logsignals import STATED_DIVERGED
from runlens.io.reader.names import PERPLEXITY, tokens
from runlens.stats.shift import level_shift

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Series


#: More tokens than any vocabulary holds (the largest are a few hundred thousand): a perplexity above it
#: is worse than guessing uniformly over every token there is.
MAX_VOCABULARY = 10**7


def beyond_any_vocabulary(config: Any, steps: np.ndarray, x: np.ndarray) -> CurveVerdict | None:
    """Diverged when the loss is read from a perplexity (``import_roles``: the log of ``ppl``) and each
    of its last third of values (1 at least) is above ln ``MAX_VOCABULARY``: a model that predicts
    worse than uniform over any vocabulary is confidently wrong, its loss blown up (OpenNMT's
    ``ppl: 2.7e43``, exp(100), its cap). No trend or size is needed: the level alone says it."""
    if role_how(config, "loss") != "log" or not x.size:
        return None
    cap = math.log(MAX_VOCABULARY)
    above = x > cap
    if not above[-max(1, x.size // 3):].all():
        return None
    at = 0 if above.all() else int(x.size - np.argmin(above[::-1]))  # where the run of such values began
    return CurveVerdict(
        "diverged", f"the perplexity ends at {math.exp(min(float(x[-1]), 700.0)):.3g} (loss {float(x[-1]):.4g}), "
        f"above {MAX_VOCABULARY:.0e} at " + (f"each of its {x.size} values" if at == 0 else
                                              f"each of its last {x.size - at} of {x.size}") + ": worse than guessing uniformly over "
        "any vocabulary, the model is confidently wrong",
        {"perplexity_loss": float(x[-1]), "vocabulary_bound": MAX_VOCABULARY, "loss_bound": cap,
         "points": int(x.size), "kind": "beyond_any_vocabulary", "step": int(steps[at])})


def held_out_beyond_vocabulary(run: Run) -> CurveVerdict | None:
    """Diverged when a held-out perplexity's last evaluation is above ``MAX_VOCABULARY`` or infinite
    (OpenNMT-tf's ``loss = 148890.7 ; perplexity = inf``): exp of a per-token loss overflows only past
    88 nats in float32, and no model that learnt anything scores worse than uniform over every token."""
    t = run.evals
    for name in t.column_names if t is not None else ():
        if not PERPLEXITY & set(tokens(name)):
            continue
        v = run.column("evals", name)
        steps = run.steps("evals")
        if v is None or steps is None:
            continue
        seen = ~np.isnan(v)
        if not seen.any() or not float(v[seen][-1]) > MAX_VOCABULARY:
            continue
        last, at = float(v[seen][-1]), int(steps[seen][-1])
        return CurveVerdict(
            "diverged", f"the held-out perplexity ({name}) is {last:.3g} at its last evaluation (step {at}), above "
            f"{MAX_VOCABULARY:.0e}: worse than guessing uniformly over any vocabulary, the model is confidently "
            "wrong", {"kind": "held_out_beyond_vocabulary", "eval_column": name, "perplexity": last,
                      "vocabulary_bound": MAX_VOCABULARY, "step": at})
    return None


def masked_nan(grad_norm: Series | None, steps: np.ndarray, x: np.ndarray) -> dict[str, Any] | None:
    """The loss collapsing to exactly 0 at the step where the gradients become non-finite, or become
    and stay exactly 0 with it (from a loss at least a tenth of its highest, for the rest of the log).

    A NaN replaced by 0 (``nan_to_num``, a masked mean over nothing, a
    ``where`` on the loss) leaves a perfect loss with broken gradients: the
    zero is a non-finite loss in disguise. Needs the loss to have been
    positive before, and a non-finite global gradient norm at that step or
    the next recorded one.
    """
    zero = np.flatnonzero((x == 0.0) & (np.arange(x.size) > 0))
    if grad_norm is None or zero.size == 0 or not np.any(x[:zero[0]] > 0):
        return None
    step = int(steps[zero[0]])
    gsteps, norms = grad_norm.steps, grad_norm.values
    later = np.flatnonzero(gsteps >= step)
    if later.size == 0:
        return None
    g = int(later[0])
    gap = int(np.median(np.diff(gsteps))) if gsteps.size > 1 else 1
    if int(gsteps[g]) > step + max(1, gap):
        return None
    before = x[:zero[0]]
    last = float(before[before > 0][-1])
    out = {"zero_loss_step": step, "nonfinite_grad_step": int(gsteps[g]), "grad_norm_source": grad_norm.source,
           "zero_loss_steps": int(np.count_nonzero(x[zero[0]:] == 0.0)), "last_positive_loss": last}
    if not np.isfinite(norms[g]):
        return out
    # The same collapse with the gradient exactly 0 too, from a loss far from 0 and for good: no signal
    # is left (a loss masked to nothing, every label ignored). A loss that trains to 0 gets there by
    # orders of magnitude, and its last positive value is close to 0.
    after = np.flatnonzero(gsteps >= step)
    if (norms[g] == 0.0 and np.all(x[zero[0]:] == 0.0) and x.size - zero[0] >= 2
            and np.all(norms[after] == 0.0) and last >= 0.1 * float(np.max(before))):
        return {**out, "nonfinite_grad_step": None, "zero_grad_step": int(gsteps[g])}
    return None


def ended_exploding(grad: Any, steps: np.ndarray, x: np.ndarray, start: float,
                    minimum: float) -> dict[str, Any] | None:
    """The log ends on fewer than 3 losses >= 10 ``max(start, minimum)`` (too few for
    the magnitude rule: alone they could be a spike) while the gradient norm at
    those steps is >= 10 times its median before them too: both signals left
    their scale together and the run stopped there, an explosion."""
    if not (minimum > 0 and start > 0) or grad is None or grad.values.size < 10:
        return None
    big = x >= 10 * max(start, minimum)
    n_tail = big.size if big.all() else int(np.argmin(big[::-1]))
    if not 1 <= n_tail < 3:
        return None
    at = steps[-n_tail:]
    g_before = grad.values[(grad.steps < at[0]) & np.isfinite(grad.values)]
    g_at = np.nan_to_num(grad.values[np.isin(grad.steps, at)], nan=np.inf)
    if g_before.size < 10 or g_at.size == 0 or not np.median(g_before) > 0:
        return None
    ratio = float(np.min(g_at)) / float(np.median(g_before))
    if not ratio >= 10:
        return None
    return {"orders_of_magnitude": math.log10(float(np.min(x[-n_tail:])) / minimum), "grad_norm_ratio": ratio,
            "exploding_points": n_tail, "step": int(at[0])}


#: How far above every value before it a loss must blow up, at two points in a row, to have blown up:
#: three orders of magnitude, which no minibatch's noise nor a hard batch reaches twice running.
BLOWUP = 1e3


def blew_up_for_good(x: np.ndarray) -> dict[str, Any] | None:
    """The first place where two points in a row are each ``BLOWUP`` times the largest value before
    them (positive) and no point from there on comes back to that value: the loss blew up and, whatever
    it did next (a reset to chance, a slow fall from 1e11), never returned to the range it trained in.
    A spike comes back; a run that blew up and recovered does too. None when the loss never did."""
    if x.size < 3:
        return None
    top = np.maximum.accumulate(x)
    up = (x[1:-1] >= BLOWUP * top[:-2]) & (x[2:] >= BLOWUP * top[:-2]) & (top[:-2] > 0)
    if not up.any():
        return None
    i = int(np.argmax(up)) + 1
    ref = float(top[i - 1])
    if not np.all(x[i:] > ref):
        return None
    return {"blowup_index": i, "level_before": ref, "blowup_orders": math.log10(float(x[i]) / ref),
            "points_after": int(x.size - i)}


def blown_verdict(steps: np.ndarray, x: np.ndarray, evidence: dict[str, Any]) -> CurveVerdict | None:
    """Diverged by :func:`blew_up_for_good`, with ``evidence`` (the curve's) beside its numbers."""
    b = blew_up_for_good(x)
    if b is None:
        return None
    i = b.pop("blowup_index")
    return CurveVerdict(
        "diverged", f"the loss blew up {b['blowup_orders']:.1f} orders of magnitude at step {int(steps[i])} "
        f"(to {float(x[i]):.4g}, from at most {b['level_before']:.4g} before) and never came back to that "
        f"range: each of its {b['points_after']} points from there on is above it, the last {float(x[-1]):.4g}",
        {**evidence, **b, "blowup": BLOWUP, "kind": "blew_up_for_good", "step": int(steps[i])})


def diverged(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, f: dict[str, Any]) -> CurveVerdict | None:
    S, F, m = f["start_level"], f["final_level"], f["min_level"]
    tail = x[-3:]
    first = float(x[0])
    if first > 0 and x.size > 3 and float(np.min(x[1:])) >= 10 * first:
        # The loss left its first value by an order of magnitude at once and never came back
        # (lr=10: 0.7 -> 4,000 at step 1): the start level, a median of the first steps, already
        # holds the blow-up, so the tests below would see a flat loss.
        orders = math.log10(float(np.median(x[1:])) / first)
        return CurveVerdict(
            "diverged", f"the loss jumped from {first:.4g} at step {int(steps[0])} to {float(x[1]):.4g} at "
            f"step {int(steps[1])} and never came back within 10x of its first value",
            _ev(f, orders_of_magnitude=orders, kind="jump_from_first", step=int(steps[1])))
    if m > 0 and S > 0 and np.all(tail >= 10 * max(S, m)):
        orders = math.log10(float(np.min(tail)) / m)
        return CurveVerdict(
            "diverged", f"the loss grew by {orders:.1f} orders of magnitude after step {f['min_step']}: "
            f"from {m:.4g} to {float(x[-1]):.4g} (start {S:.4g})",
            _ev(f, orders_of_magnitude=orders, step=f["min_step"]))
    if (blown := blown_verdict(steps, x, _ev(f))) is not None:
        return blown
    if not F - m >= max(S - m, cfg.growth * f["scale"]):
        return None
    t = f["after_min_trend"]
    if t is None or not t.p_increasing < cfg.alpha_strong:
        # A sudden jump that lands above where training started and stays
        # there gave back all the progress and more, like a climb does.
        shift = memo(f, "level_shift", lambda: level_shift(steps, x, S, alpha=cfg.alpha_strong))
        if shift is None or not shift["level_after"] - m >= max(S - m, cfg.growth * f["scale"]):
            return None
        return CurveVerdict(
            "diverged", f"the loss jumped at step {shift['shift_step']} from {shift['level_before']:.4g} to "
            f"{shift['level_after']:.4g}, above where it started ({S:.4g}), and stayed there "
            f"(Mann-Whitney p={shift['mannwhitney_p']:.1e})",
            _ev(f, **shift, kind="jump_above_start", step=shift["shift_step"]))
    return CurveVerdict(
        "diverged", f"the loss grows after step {f['min_step']}: from {m:.4g} to {F:.4g} "
        f"(start {S:.4g}; Kendall tau={t.tau:.2f}, p={t.p_increasing:.1e})",
        _ev(f, after_min_trend=t.to_dict(), step=f["min_step"]))


def ended_exploding_verdict(grad: Series | None, steps: np.ndarray, x: np.ndarray,
                            f: dict[str, Any]) -> CurveVerdict | None:
    e = ended_exploding(grad, steps, x, f["start_level"], f["min_level"])
    if e is None:
        return None
    return CurveVerdict(
        "diverged", f"the log ends with the loss {e['orders_of_magnitude']:.1f} orders of magnitude above its "
        f"minimum ({float(x[-1]):.4g}, start {f['start_level']:.4g}) and the gradient norm "
        f"{e['grad_norm_ratio']:.3g}x its median: the run stopped as it blew up",
        _ev(f, **e, kind="ended_exploding"))


def stated_by_the_loop(run: Run) -> CurveVerdict | None:
    """Diverged when the training code says in its own words that the loss blew up ("Exception: Loss
    exploded", Tacotron's guard on a loss 100x its mean; "Aborting, cost seems to be exploding",
    NeuralTalk's; "Model diverged") and the run went no further: its error says so, or its events hold
    the words (a log reader keeps them only when no training line came after them). The loop judged
    it and stopped, with a finite loss the last line may not show."""
    crashed = run.status == "crashed"
    ev = run.events
    if ev is not None and {"kind", "message"} <= set(ev.column_names):
        steps = ev.column("step").to_pylist() if "step" in ev.column_names else [None] * ev.num_rows
        for step, kind, message in zip(steps, ev.column("kind").to_pylist(), ev.column("message").to_pylist(),
                                       strict=True):
            if kind in ("loss_spike", "exception", "nonfinite_loss") and message and STATED_DIVERGED.search(str(message)):
                return _stated(str(message), step)
    error = run.error if crashed and isinstance(run.error, Mapping) else {}
    said = str(error.get("message", ""))
    if said and STATED_DIVERGED.search(said):
        return _stated(said, error.get("step"))
    return _died_nonfinite(error) if said else None


def _died_nonfinite(error: Mapping[str, Any]) -> CurveVerdict | None:
    """Diverged when the run died of a check on a value gone NaN or Inf (anomaly mode's ``returned nan
    values``, a distribution's argument check, an ODE solver's ``underflow in dt nan``): whatever the few
    losses before it show, the numbers of the model had left the finite range."""
    decoded = decode(error)
    if decoded.kind != "nonfinite":
        return None
    step = error.get("step")
    return CurveVerdict("diverged", f"the run died of a value gone non-finite ({decoded.error_type}: "
                        f"{decoded.message[:160]!r}): {decoded.cause}",
                        {"kind": "died_nonfinite", "message": decoded.message[:300], "error_type": decoded.error_type,
                         **({"step": int(step)} if isinstance(step, int) else {})})


def _stated(message: str, step: Any) -> CurveVerdict:
    return CurveVerdict("diverged", f"the training code stopped the run saying the loss blew up: {message[:200]!r}",
                        {"kind": "stated_by_the_loop", "message": message[:300],
                         **({"step": int(step)} if isinstance(step, int) else {})})
