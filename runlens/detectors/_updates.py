"""How large each optimizer step was relative to the weights, measured or bounded.

``update_norm`` is optional in format v1. Without it the size of a step
can still be said, but only with an assumption, and each detector must use
the kind of number that is honest for its claim:

- a **lower bound** (``lower_ratios``): ``|Δ‖w‖| <= ‖Δw‖`` (triangle
  inequality), so the change of a module's weight norm between two records,
  per step, bounds its mean update from below. Evidence that updates were
  *large*, never that they were tiny (an update orthogonal to ``w`` barely
  changes its norm).
- an **upper estimate** (``upper_ratios``) from the logged learning rate and
  gradient norms: exact for plain SGD without momentum or weight decay
  (``‖Δw‖ = lr ‖g‖``, lr of the first param group; clipping only makes it
  smaller), ``lr ‖g‖ / (1 - momentum)`` for SGD with momentum (the
  steady-state velocity of a consistent gradient), and ``lr sqrt(numel)`` for
  Adam-family optimizers (each element moves by about ``lr`` at most). The
  optimizer comes from run.json ``config`` when it names one; otherwise the
  data decide: plain SGD is kept when ``|Δ‖w‖| <= lr ‖g‖`` holds where it
  must, and when the data rule it out the largest of the momentum-0.9 and
  Adam bounds is used. Evidence that updates were *tiny*.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors._base import Skip
from runlens.signals import ModuleMatrix, Signals, signals_of
from runlens.signals.layers import MAX_ROWS

if TYPE_CHECKING:
    from runlens.io.run import Run

_ROUNDING = 2.0 ** -22  # two float32 norms, each rounded to 2**-24 of its value, then subtracted
SGD_MARGIN = 2.0  # gradients of the unrecorded steps between two records may differ from the recorded one
MAX_VIOLATIONS = 0.01  # share of intervals where plain SGD's inequality may fail before it is ruled out
MAX_MODULE_VIOLATIONS = 0.1  # the same within one module (with at least 10 intervals)
DEFAULT_MOMENTUM = 0.9


@dataclass(frozen=True)
class UpdateRatios:
    """Per-step update/weight ratios (steps x modules) and how they were obtained.

    ``source`` is ``update_norm`` (measured), ``weight_norm_change`` (lower
    bound), ``lr_x_grad_norm`` or ``lr_x_sqrt_numel`` (upper estimates);
    ``assumption`` says in words what the number rests on.
    """

    steps: np.ndarray
    values: np.ndarray
    source: str
    assumption: str
    optimizer: str | None = None
    sgd_violation_share: float | None = None
    lr_source: str | None = None

    def evidence(self) -> dict[str, Any]:
        out: dict[str, Any] = {"update_source": self.source, "update_assumption": self.assumption}
        if self.optimizer is not None:
            out["optimizer_assumed"] = self.optimizer
        if self.lr_source is not None:
            out["lr_source"] = self.lr_source
        if self.sgd_violation_share is not None:
            out["sgd_violation_score"] = self.sgd_violation_share
        return out


def optimizer_family(config: Mapping[str, Any]) -> tuple[str | None, float | None]:
    """(``"sgd"`` / ``"adam"`` / None, momentum or None) from a run's config."""
    name = None
    for key in ("optimizer", "optim", "optimizer_name", "opt"):
        v = config.get(key)
        if isinstance(v, Mapping):
            v = v.get("name") or v.get("type") or v.get("class")
        if isinstance(v, str) and v:
            name = v.lower()
            break
    momentum = config.get("momentum")
    momentum = float(momentum) if isinstance(momentum, (int, float)) and not isinstance(momentum, bool) \
        and 0 <= momentum < 1 else None
    if name is None:
        return None, momentum
    if any(k in name for k in ("adam", "lamb", "lion", "adagrad", "rmsprop", "adafactor")):
        return "adam", momentum
    if "sgd" in name or "momentum" in name or "nesterov" in name:
        return "sgd", momentum if momentum is not None else (DEFAULT_MOMENTUM if "sgd" not in name else None)
    return None, momentum


def lr_at(run: Run, steps: np.ndarray) -> tuple[np.ndarray | None, str]:
    """The learning rate at ``steps`` and where it came from, or (None, "").

    The signals' ``lr`` (``scalars.lr``) interpolated linearly; else a
    constant from run.json ``config`` (``lr`` / ``learning_rate``, at its top
    level or under ``optimizer``, ``optim``, ``optimizer_params``,
    ``optimizer_kwargs``): the base rate, which warm-up and decay schedules
    stay below, so an upper estimate made with it stays an upper estimate
    (a one-cycle schedule whose peak is set elsewhere is the exception).
    """
    lr = signals_of(run).lr
    if lr is not None:
        return np.interp(steps.astype(np.float64), lr.steps.astype(np.float64), lr.values), "scalars.lr"
    cfg = run.config
    places = [("", cfg)] + [(f"{k}.", cfg[k]) for k in ("optimizer", "optim", "optimizer_params", "optimizer_kwargs")
                            if isinstance(cfg.get(k), Mapping)]
    for prefix, where in places:
        for key in ("lr", "learning_rate"):
            v = where.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v >= 0:
                return np.full(len(steps), float(v)), f"config.{prefix}{key} (constant: scalars.lr not logged)"
    return None, ""


def module_numel(run: Run, members: tuple[tuple[str, ...], ...]) -> np.ndarray | None:
    """Elements per module from run.json ``numel`` (or ``shape``); None when any is unknown."""
    lay = signals_of(run).layers
    numel = {n: v for n, v in zip(lay.names, lay.numel, strict=True) if np.isfinite(v)}
    if not all(name in numel for group in members for name in group):
        return None
    return np.array([sum(numel[n] for n in group) for group in members], dtype=np.float64)


def lower_ratios(weights: ModuleMatrix) -> UpdateRatios | None:
    """``|Δ‖w‖| / (Δstep ‖w‖)`` between consecutive records, less float32 rounding: a
    lower bound of the mean update ratio over the interval."""
    w, steps = weights.values, weights.steps
    if len(steps) < 2:
        return None
    ds = np.diff(steps).astype(np.float64)[:, None]
    with np.errstate(all="ignore"):  # float32 rounding of the two norms is taken off first
        ratio = np.maximum(np.abs(np.diff(w, axis=0)) - _ROUNDING * w[1:], 0.0) / (ds * w[1:])
    ratio = np.where(np.isfinite(ratio), ratio, np.nan)
    return UpdateRatios(steps[1:], ratio, "weight_norm_change",
                        "lower bound: |change of the weight norm| <= norm of the update (triangle inequality)")


def sgd_violations(weights: ModuleMatrix, grads: ModuleMatrix, lr: np.ndarray) -> float | None:
    """Share of record intervals where ``|Δ‖w‖| > 2 lr ‖g‖ Δstep`` (+ float32 rounding).

    Plain SGD cannot do that; Adam (whose step does not scale with the
    gradient) and momentum do. The largest of the overall share and the
    share of the worst module (with at least 10 intervals) over its limit,
    scaled so that a value above 1 rules plain SGD out. Only intervals of
    the recording stride (the shortest common gap: sampled rows come in
    pairs) are used.
    """
    w, g, steps = weights.values, grads.values, weights.steps
    if len(steps) < 3:
        return None
    ds = np.diff(steps)
    values, counts = np.unique(ds, return_counts=True)
    usual = ds == values[np.flatnonzero(counts * 2 >= counts.max())[0]]  # the recording stride
    dw = np.abs(np.diff(w, axis=0))[usual]
    bound = (SGD_MARGIN * lr[1:, None] * g[1:] * ds[:, None] + _ROUNDING * w[1:])[usual]
    ok = np.isfinite(dw) & np.isfinite(bound)
    if not ok.any():
        return None
    viol = ok & (dw > bound)
    overall = viol.sum() / ok.sum()
    counts = ok.sum(axis=0)
    per_module = np.where(counts >= 10, viol.sum(axis=0) / np.maximum(counts, 1), 0.0)
    return float(max(overall / MAX_VIOLATIONS, per_module.max() / MAX_MODULE_VIOLATIONS))


def upper_ratios(run: Run, weights: ModuleMatrix, grads: ModuleMatrix) -> tuple[UpdateRatios | None, str]:
    """Upper estimates of the update/weight ratio without ``update_norm``, or (None, why not)."""
    lr, lr_source = lr_at(run, weights.steps)
    if lr is None:
        return None, ("update_norm was not logged, nor the learning rate (scalars.lr or config lr) to estimate "
                      "it from")
    family, momentum = optimizer_family(run.config)
    violations = sgd_violations(weights, grads, lr)
    with np.errstate(all="ignore"):
        sgd = lr[:, None] * grads.values / weights.values
    if family is None and violations is not None and violations <= 1.0:
        return UpdateRatios(weights.steps, sgd, "lr_x_grad_norm",
                            "plain SGD (lr x gradient norm): the optimizer is not named in the config and the "
                            "weight norms never changed faster than plain SGD allows", "sgd (inferred)",
                            violations, lr_source), ""
    if family == "sgd":
        beta = momentum if momentum is not None else (0.0 if violations is not None and violations <= 1.0
                                                      else DEFAULT_MOMENTUM)
        return UpdateRatios(weights.steps, sgd / (1 - beta), "lr_x_grad_norm",
                            f"SGD with momentum {beta:g} as the config names it (lr x gradient norm / "
                            f"(1 - momentum))", "sgd", violations, lr_source), ""
    numel = module_numel(run, weights.members)
    if numel is None:
        return None, ("update_norm was not logged, and without the layers' numel (run.json shape) the step of an "
                      "optimizer other than plain SGD cannot be bounded")
    with np.errstate(all="ignore"):
        adam = lr[:, None] * np.sqrt(numel)[None, :] / weights.values
    if family == "adam":
        return UpdateRatios(weights.steps, adam, "lr_x_sqrt_numel",
                            "Adam-family optimizer as the config names it: each element moves by at most about "
                            "lr per step", "adam", violations, lr_source), ""
    return UpdateRatios(weights.steps, np.fmax(adam, sgd / (1 - DEFAULT_MOMENTUM)), "lr_x_sqrt_numel",
                        "optimizer unknown and not plain SGD (the weight norms changed faster than lr x gradient "
                        "norm allows): the larger of the SGD-momentum-0.9 and Adam-family bounds",
                        "sgd with momentum or adam (unknown)", violations, lr_source), ""


def step_ratios(sig: Signals) -> tuple[np.ndarray, str, ModuleMatrix]:
    """(steps x modules update/weight, source, the weight ModuleMatrix) from a run's signals.

    Measured (``update_norm / weight_norm``) when update norms are logged,
    else the lower bound of :func:`lower_ratios`: evidence that steps were
    large, never that they were small. Raises :class:`Skip` when neither
    is there.
    """
    lay = sig.layers
    wts = lay.modules("weight_norm", max_rows=MAX_ROWS, with_next=True) if lay else None
    if wts is None or wts.values.shape[0] == 0:
        raise Skip("needs per-layer update or weight norms to measure the step size")
    upd = lay.modules("update_norm", max_rows=MAX_ROWS, with_next=True)
    if upd is not None and upd.values.shape == wts.values.shape:
        with np.errstate(all="ignore"):
            return np.where(wts.values > 0, upd.values / wts.values, np.nan), "update_norm", wts
    lower = lower_ratios(wts)
    if lower is None:
        raise Skip("needs update norms, or weight norms at two recorded steps, to measure the step size")
    return lower.values, "weight_norm_change", wts


@dataclass(frozen=True)
class StepRatioSummary:
    """Update/weight ratios over some rows of the records: ``median`` (of the per-row medians over
    modules), ``source`` (see :class:`UpdateRatios`), and the largest module's own median,
    ``largest`` of module ``module``."""

    median: float
    source: str
    largest: float
    module: str


def step_ratio_summary(sig: Signals, *, first: int | None = None) -> StepRatioSummary | None:
    """The update/weight ratios of the first ``first`` layer records, or of the second half when
    ``first`` is None (so that a warmup or one-cycle peak early in the run, where large steps are
    ordinary, does not count), summarised; None without step sizes or a finite ratio there."""
    try:
        ratio, source, modules = step_ratios(sig)
    except Skip:
        return None
    rows = slice(ratio.shape[0] // 2, None) if first is None else slice(0, first)
    part = np.where(np.isfinite(ratio[rows]), ratio[rows], np.nan)
    ok = np.isfinite(part).any(axis=1)
    if not ok.any():
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a module with no finite ratio in these rows
        per_module = np.nanmedian(part[ok], axis=0)
    worst = int(np.nanargmax(per_module)) if np.isfinite(per_module).any() else 0
    return StepRatioSummary(float(np.median(np.nanmedian(part[ok], axis=1))), source,
                            float(np.nan_to_num(per_module[worst])), modules.modules[worst])


COLLAPSE = 0.1  # weights that end below a tenth of their first norm: an order of magnitude lost


def weight_norm_ratio(sig: Signals) -> float | None:
    """Median over modules of the last recorded weight norm over the first; None without two records."""
    lay = sig.layers
    wts = lay.modules("weight_norm", max_rows=MAX_ROWS) if lay else None
    if wts is None or wts.values.shape[0] < 2:
        return None
    v = np.where(np.isfinite(wts.values), wts.values, np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        first = np.array([col[np.isfinite(col) & (col > 0)][0] if (np.isfinite(col) & (col > 0)).any()
                          else np.nan for col in v.T])
        last = np.array([col[np.isfinite(col)][-1] if np.isfinite(col).any() else np.nan for col in v.T])
        r = np.nanmedian(last / first)
    return float(r) if np.isfinite(r) else None


def weight_collapse(sig: Signals, config: Mapping[str, Any]) -> tuple[float | None, str]:
    """(:func:`weight_norm_ratio`, a clause saying the weights collapsed when the ratio is <= ``COLLAPSE``)."""
    ratio = weight_norm_ratio(sig)
    if ratio is None or ratio > COLLAPSE:
        return ratio, ""
    wd = config.get("weight_decay")
    to = "to zero" if ratio == 0 else f"to {ratio:.2g} of their first norm"
    return ratio, (f"; the weights shrank {to}, pinned near zero"
                   + (f" (weight_decay {wd:g} in the config)" if isinstance(wd, (int, float)) else ""))
