"""validation_in_train_mode: validation run without ``model.eval()`` (dropout and batch statistics on)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import DROPOUT_KEYS, config_number, sign_p, train_loss_at
from runlens.stats.trend import trend

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run

_MODE_KINDS = ("BatchNorm", "Dropout", "InstanceNorm", "SyncBatchNorm")


@register
class ValidationInTrainMode(Detector):
    """Validation ran with the model in training mode: dropout dropped units and batch norm used (and
    updated) the validation batch's statistics.

    What it detects:
        Evaluations made without ``model.eval()`` (or after a
        ``model.train()`` that was never undone). The recorder writes the
        mode of the validation's own forwards at each ``rec.validation()``
        (evals column ``model_training``, 1 = training mode); that flag
        decides. Without
        it, a conservative reading of the log: the config states a dropout
        of at least ``min_dropout``, and the validation loss is above the
        training loss at the same point by a steady factor from the very
        first evaluation (overfitting starts level and grows apart; training
        mode is a constant penalty).

    Why it matters:
        The validation loss is inflated by dropout noise (1.5x is common),
        the batch-norm running statistics are overwritten by the validation
        data, and model selection or early stopping acts on a number that is
        not the model's: the reported metrics are worse than the model, or
        differ between runs for no reason.

    How it decides:
        With ``model_training``: fires when the share of evaluations in
        training mode is at least ``min_share`` and the mode matters: run.json
        lists a batch-norm-like layer (``mode_layers``) or the config states
        a dropout of at least ``min_dropout`` (dropout has no parameters, so
        run.json cannot show it; a model with neither validates the same in
        either mode, and many loops skip ``model.eval()`` harmlessly).
        Without it: needs at least ``min_evals`` evaluations; fires when the
        validation/training loss ratio is above ``min_ratio`` on every one
        (one-sided sign test at ``alpha``), the first evaluation included,
        and Kendall's test finds no rising trend of the ratio at ``alpha``
        (a rising ratio is overfitting). Severity warning.

    What to try:
        Call model.eval() before the validation loop (and wrap it in
        torch.no_grad()), then model.train() before training resumes; a
        context manager that restores the previous mode avoids forgetting
        either.

    Parameters:
        min_share: least share of evaluations in training mode that fires, from the recorder's flag (0.5).
        min_dropout: least dropout in the config for the log-only reading (0.1).
        min_ratio: least validation/training loss ratio at every evaluation, log-only reading (1.2).
        min_evals: least evaluations for the log-only reading (8).
        alpha: significance level of the sign and trend tests (0.01).
    """

    code = "validation_in_train_mode"
    severity = "warning"
    title = "Validation computed in training mode"
    needs = Needs(scalars=("loss",), evals=("val_loss", "model_training"), requires=("evals.val_loss",))
    constraints = {"min_share": Interval(float, 0, 1, closed="right"), "min_dropout": Interval(float, 0, 1),
                   "min_ratio": Interval(float, 1, None), "min_evals": Interval(int, 3, None),
                   "alpha": Interval(float, 0, 1, closed="neither")}

    def __init__(self, *, min_share: float = 0.5, min_dropout: float = 0.1, min_ratio: float = 1.2,
                 min_evals: int = 8, alpha: float = 0.01) -> None:
        self.min_share = min_share
        self.min_dropout = min_dropout
        self.min_ratio = min_ratio
        self.min_evals = min_evals
        self.alpha = alpha

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        flag = run.column("evals", "model_training")
        if flag is not None and (finite := np.isfinite(flag)).any():
            return self._from_flag(run, flag[finite], run.steps("evals")[finite])
        return self._from_log(run, ctx)

    def _from_flag(self, run: Run, flag: np.ndarray, steps: np.ndarray) -> list[Finding]:
        share = float(np.mean(flag > 0))
        mode_layers = sorted({str(e.get("kind")) for e in run.layer_info
                              if any(k in str(e.get("kind")) for k in _MODE_KINDS)})
        dropout, _ = config_number(run.config, DROPOUT_KEYS)
        if share < self.min_share or not (mode_layers or (dropout or 0) >= self.min_dropout):
            return []  # training mode changes nothing the log can see: no batch norm, no dropout stated
        first = int(steps[np.flatnonzero(flag > 0)[0]])
        ev = {"train_mode_share": share, "evals": int(flag.size), "source": "evals.model_training",
              "mode_layers": mode_layers, "dropout": dropout}
        return [self.finding(
            f"{int((flag > 0).sum())} of {flag.size} validation passes ran with the model in training mode "
            f"(model.training was True at rec.validation(), first at step {first})", step=first, evidence=ev)]

    def _from_log(self, run: Run, ctx: Context) -> list[Finding]:
        dropout, dsrc = config_number(run.config, DROPOUT_KEYS)
        if dropout is None or dropout < self.min_dropout:
            return []
        sig = ctx.signals_of(run)
        val = sig.validation.get("val_loss")
        if val is None or len(sig.loss) < 10:
            raise Skip("needs a validation loss and at least 10 training losses")
        val = val.finite()
        train = train_loss_at(sig.loss, val.steps)
        ok = np.isfinite(train) & (train > 0)
        if ok.sum() < self.min_evals:
            raise Skip(f"needs at least {self.min_evals} evaluations during training for the log-only reading")
        ratio = val.values[ok] / train[ok]
        above = ratio > self.min_ratio
        p = sign_p(int(above.sum()), int(ok.sum()))
        tr = trend(np.log(ratio), val.steps[ok].astype(float))
        rising = bool(tr.p_increasing <= self.alpha)
        if not above.all() or p > self.alpha or rising:
            return []
        med = float(np.median(ratio))
        ev = {"val_train_ratio": med, "evals": int(ok.sum()), "sign_p": p, "dropout": dropout,
              "dropout_source": dsrc, "ratio_trend_p": tr.p_increasing,
              "source": "log (no model_training column)"}
        return [self.finding(
            f"the validation loss is {med:.3g}x the training loss at every one of {int(ok.sum())} evaluations, "
            f"from the first, with dropout {dropout:g} in the config: validation likely in training mode",
            step=int(val.steps[ok][0]), evidence=ev)]
