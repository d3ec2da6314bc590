"""Metric names as logs spell them, mapped to the format's columns: the alias table.

One table for every reader of free-form names (text logs, JSON lines,
MLflow and W&B keys). A name is normalised first: lower case, ``_``, ``-``,
``/`` and runs of spaces become one space, so ``Train loss``,
``train_loss`` and ``train/loss`` are the same name. Anything the table
does not name stays a user scalar under its own (sanitised) name; names
that look like validation metrics (``val``, ``valid``, ``eval``,
``validation``, ``test`` first) go to the evals table.

Several validation sets: ``eval_<set>_loss``, ``val_<set>_loss``,
``<set>/val_loss`` and ``val_loss/<set>`` become ``val_loss@<set>``.
"""

from __future__ import annotations

import re

from runlens.io.importers._common import column_name, val_set_column

# normalised name -> format column (scalars unless it is val_loss)
ALIASES: dict[str, str] = {
    **dict.fromkeys(("loss", "train loss", "training loss", "total loss", "lm loss", "trl", "loss train",
                     "train total loss", "batch loss", "train batch loss", "train loss step", "loss step",
                     "avg loss", "average loss", "train avg loss", "running loss", "objective"), "loss"),
    **dict.fromkeys(("val loss", "valid loss", "validation loss", "eval loss", "evaluation loss", "tel",
                     "val total loss", "loss val", "loss valid", "loss validation", "val loss epoch",
                     "validation lm loss", "lm loss value", "dev loss"), "val_loss"),
    **dict.fromkeys(("lr", "learning rate", "current learning rate", "train lr", "train learning rate",
                     "lr adam", "lr adamw", "lr sgd", "lr 0", "lr group 0", "lr pg0"), "lr"),
    **dict.fromkeys(("grad norm", "gradient norm", "gnorm", "norm", "total norm", "grad norm total",
                     "train grad norm", "global grad norm", "grad 2.0 norm total", "grad l2 norm"),
                    "grad_norm"),
    **dict.fromkeys(("loss scale", "scale", "grad scale", "loss scaler", "amp scale"), "loss_scale"),
    **dict.fromkeys(("epoch", "epochs", "train epoch", "cur epoch"), "epoch"),
}
ROLES = ("loss", "val_loss", "lr", "grad_norm", "loss_scale", "epoch")
STEP_KEYS = ("global_step", "step", "iteration", "iter", "it", "trainer/global_step", "train/global_step",
             "_step", "global step", "num_steps", "steps")
_EVAL_PREFIX = re.compile(r"^(?:val|valid|validation|eval|evaluation|test|dev)\b")
_SET_PATTERNS = (
    re.compile(r"^(?:eval|val|valid|validation) (.+) loss$"),
    re.compile(r"^(.+) (?:val|valid|validation|eval) loss$"),
    re.compile(r"^(?:val|valid|validation|eval) loss (.+)$"),
)
_NOT_SETS = frozenset({"lm", "total", "avg", "average", "mean", "epoch", "step", "batch", "value", "running"})


def normalise(name: str) -> str:
    """``Train_Loss`` / ``train/loss`` / ``train  loss`` -> ``train loss``."""
    return re.sub(r"[\s_/\-]+", " ", name.strip().lower()).strip(" ()[]")


def map_name(name: str, *, eval_line: bool = False) -> tuple[bool, str]:
    """``(is_eval, column)`` for a metric logged under ``name``.

    ``eval_line`` says the whole line reports a validation pass
    (``Epoch(val)``, ``validation loss at iteration``): there a plain
    ``loss`` is the validation loss and every field goes to evals.
    """
    norm = normalise(name)
    role = ALIASES.get(norm)
    if eval_line:
        if role in ("loss", "val_loss"):
            return True, "val_loss"
        return True, column_name(name if _EVAL_PREFIX.match(norm) else "val_" + name)
    if role is not None:
        return role == "val_loss", role
    for pat in _SET_PATTERNS:
        m = pat.match(norm)
        if m and m.group(1) not in _NOT_SETS:
            return True, val_set_column(m.group(1).replace(" ", "_"))
    return bool(_EVAL_PREFIX.match(norm)), column_name(name)


_STEP_NORM = frozenset(normalise(k) for k in STEP_KEYS)


def is_step_key(name: str) -> bool:
    """Whether ``name`` is one of the names logs give the training step."""
    return normalise(name) in _STEP_NORM


class Mapper:
    """Field name -> (is_eval, column) by the alias table, with the user's ``--loss`` /
    ``--val-loss`` names first, memoised per name. A field the table would map to an
    overridden role steps aside under its own name (``... default``), so the named
    field is the only one in that role, whatever order the fields come in."""

    def __init__(self, loss: str | None, val_loss: str | None) -> None:
        self.loss = normalise(loss) if loss else None
        self.val_loss = normalise(val_loss) if val_loss else None
        self._memo: dict[tuple[str, bool], tuple[bool, str]] = {}

    def __call__(self, name: str, eval_line: bool = False) -> tuple[bool, str]:
        key = (name, eval_line)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._map(name, eval_line)
        return hit

    def _map(self, name: str, eval_line: bool) -> tuple[bool, str]:
        norm = normalise(name)
        if self.loss is not None and norm == self.loss:
            return False, "loss"
        if self.val_loss is not None and norm == self.val_loss:
            return True, "val_loss"
        is_eval, col = map_name(name, eval_line=eval_line)
        if (col == "loss" and self.loss is not None) or (col == "val_loss" and self.val_loss is not None):
            return is_eval, column_name(("val " if is_eval else "") + name + " default")
        return is_eval, col
