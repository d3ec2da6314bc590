"""Metric names mapped to the format's columns one at a time, by the reader's vocabulary.

The importers that meet names one by one while streaming (console logs,
MLflow and W&B keys, Markdown headers) map each through
:func:`runlens.io.reader.names.role_of`: the same words that make a column
the loss, a validation loss, the learning rate, ... in the table reader
(:mod:`runlens.io.reader.roles`). This module has no table of names of its
own; it only turns a role into a column name and remembers which name took
which role in one source.

A name that takes no role stays a user scalar under its own (sanitised)
name; a validation name goes to the evals table. Several validation sets
(``eval_<set>_loss``, ``<set>/val_loss``) become ``val_loss@<set>``.
"""

from __future__ import annotations

import re

from runlens.io.importers._common import column_name, val_set_column
from runlens.io.reader.names import TRAIN, VAL, is_step, is_val, role_of, tokens

ROLES = ("loss", "val_loss", "lr", "grad_norm", "loss_scale", "epoch")


def normalise(name: str) -> str:
    """``Train_Loss`` / ``train/loss`` / ``train  loss`` -> ``train loss`` (how ``--loss KEY`` is matched)."""
    return re.sub(r"[\s_/\-]+", " ", name.strip().lower()).strip(" ()[]")


def map_name(name: str, *, eval_line: bool = False) -> tuple[bool, str]:
    """``(is_eval, column)`` for a metric logged under ``name``.

    ``eval_line`` says the whole line reports a validation pass
    (``Epoch(val)``, ``validation loss at iteration``): there a plain
    ``loss`` is the validation loss and every field goes to evals.
    """
    val, role = role_of(name)
    if role is not None and role.startswith("val_loss@"):
        return True, val_set_column(role.split("@", 1)[1])
    if eval_line:
        if role in ("loss", "val_loss"):
            return True, "val_loss"
        return True, column_name(name if val else "val_" + name)
    if role is None:
        return val, column_name(name)
    return role == "val_loss", role


def is_step_key(name: str) -> bool:
    """Whether ``name`` is one of the names logs give the training step."""
    return is_step(tokens(name))


def _quantity(name: str) -> tuple[str, ...]:
    """A name's words less those that only say which side it is on: ``train/loss`` and ``loss`` are one."""
    return tuple(t for t in tokens(name) if t not in TRAIN and t not in VAL)


class Mapper:
    """Field name -> (is_eval, column) by the reader's vocabulary, with the user's ``--loss`` /
    ``--val-loss`` names first, memoised per name. A field that would take an overridden role steps
    aside under its own name (``... default``), so the named field is the only one in that role,
    whatever order the fields come in. Of two names of one role that say different things
    (``loss`` and ``avg_loss``, ``loss`` and ``nll``), the first seen keeps the role and the other
    stays a scalar under its own name, so one series never mixes two quantities."""

    def __init__(self, loss: str | None, val_loss: str | None) -> None:
        self.loss = normalise(loss) if loss else None
        self.val_loss = normalise(val_loss) if val_loss else None
        self._memo: dict[tuple[str, bool], tuple[bool, str]] = {}
        self._owner: dict[tuple[bool, str], tuple[str, ...]] = {}

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
        if col in ROLES or col.startswith("val_loss@"):
            owner = self._owner.setdefault((is_eval, col), _quantity(name))
            if owner != _quantity(name):
                return is_eval, column_name(name if not is_eval or is_val(tokens(name)) else "val_" + name)
        return is_eval, col
