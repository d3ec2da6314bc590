"""Which column is the training loss, the validation loss(es), the learning rate, ... and why.

Decided from name tokens (:mod:`runlens.io.reader.names`) and values, in
one place for every shape of log:

- **index**: a step counter (``step``, ``global_step``, ``iteration``,
  ``iter``, ``current_steps``) with integral values that mostly go up; else
  an integral ``epoch`` column; else the column the shape knows to count
  its rows (a block's ``total_timesteps``; a header row's ``5/249``, an
  epoch even on one row, where it cannot be seen rising); else the row number;
- **training loss**: a loss-named column (``loss``, ``xent``, ``nll``,
  ``ce``, ``objective``) with nothing but neutral words beside it (``train_loss``, ``total_loss``,
  ``main/loss``; a per-step one before a per-epoch one); else the only loss-named column; else the sum of the
  loss parts logged without a total (``box_loss + cls_loss + dfl_loss``);
  else, with no loss word anywhere, a ``total``/``sum`` column whose values
  are the sum of two or more other columns at every row (YOLOv5's ``box obj
  cls total``), or the sum of a one-stage detector's terms with no total (``box obj cls``);
  else the log of a perplexity logged alone; else, when the only series is named ``value``,
  that value (an optimizer's trace of its objective: R's ``iter  10 value 72.296066``);
- **validation losses**: the same on columns with a ``val``/``valid``/
  ``eval``/``dev``/``test`` word; a set's name kept (``eval_wiki_loss``);
  parts matching the training parts summed; a validation column that shares
  the training loss's own word (``MAE on validation`` beside ``MAE loss``);
- a data set's name and a loss-like metric (``train-logloss``, ``valid_1's l2``: gradient boosting's
  evaluation results) is that set's loss;
- **learning rate**, **gradient norm**, **loss scale**, **epoch** by their
  words.

Every choice carries a sentence saying why; ``--loss``, ``--val-loss`` and
``--step`` name columns that win over all of this.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.stats import spearmanr

from runlens.io.reader import sequence
from runlens.io.reader.names import (
    NEUTRAL,
    PERPLEXITY,
    PERPLEXITY_MIN,
    STEP_WORDS,
    TRAIN,
    VAL,
    adversarial_side,
    counter_core,
    is_epoch,
    is_grad_norm,
    is_loss_scale,
    is_lossish,
    is_lr,
    is_val,
    qualifiers,
    set_metric_role,
    tokens,
    val_set,
)
from runlens.io.reader.objective import proxy_picks
from runlens.io.reader.parts import detector_terms, sum_of_parts, total_of_parts
from runlens.io.reader.picks import Pick, Roles
from runlens.io.reader.setnamed import lone_series, set_named
from runlens.io.reader.table import Table


def _integral(v: np.ndarray) -> bool:
    return len(v) > 0 and bool(np.all(np.isfinite(v))) and bool(np.all(v == np.round(v)))


def _rising(v: np.ndarray) -> bool:
    # Lines of several processes interleave (a step written late, twice): mostly rising is enough,
    # or a counter that follows the row order closely (rank correlation).
    if len(v) == 1:
        return True  # one record (the last table a run printed): its counter says where it stands
    d = np.diff(v)
    if len(v) < 2 or not np.any(d > 0):
        return False
    if int((d > 0).sum()) > 2 * int((d < 0).sum()):
        return True
    rho = spearmanr(v, np.arange(len(v))).statistic
    return bool(np.isfinite(rho) and rho > 0.9)


def pick_index(table: Table, step: str | None) -> tuple[str | None, str, str]:
    """``(column, kind, why)`` of the index."""
    if step is not None:
        if step not in table.values:
            raise KeyError("step", step)
        return step, "step", "named by --step"
    toks = {name: tokens(name) for name in table.names}
    for word in STEP_WORDS:
        for name, t in toks.items():
            core = counter_core(t)
            vals = table.values[name][table.present[name]]
            if core == (word,) and "total" not in t and _integral(vals) and _rising(vals):
                return name, "step", f"{name!r} is a step counter (integral, rising)"
    if "#" in table.values and _integral(v := table.values["#"][table.present["#"]]) and np.all(np.diff(v) > 0):
        return "#", "step", "'#' counts the steps (spaCy's column; integral, rising)"
    epoch = next((n for n, t in toks.items() if is_epoch(t)
                  and _integral(table.values[n][table.present[n]])), None)
    if epoch is not None:
        within = _within_epoch(table, toks, epoch)
        if within is not None:
            return within
        if _rising(table.values[epoch][table.present[epoch]]):
            return epoch, "epoch", f"{epoch!r} counts epochs and no step counter was logged"
    if table.counter is not None:
        kind = "epoch" if is_epoch(tokens(table.counter)) else "step"
        return table.counter, kind, f"{table.counter!r} counts the {table.shape} (integral, rising)"
    return None, "row", "no step or epoch counter: each row is one point, numbered from 0"


def _within_epoch(table: Table, toks: dict, epoch: str) -> tuple[str, str, str] | None:
    """A counter that starts again every epoch (mmdet's ``iter``): the step is counted across epochs."""
    for word in STEP_WORDS:
        for name, t in toks.items():
            if counter_core(t) != (word,):
                continue
            both = table.present[name] & table.present[epoch]
            it, ep = table.values[name][both], table.values[epoch][both]
            if len(it) < 2 or not _integral(it):
                continue
            order = ep * (it.max() + 1) + it
            if _rising(order) and len(np.unique(ep)) > 1:
                return f"{epoch}*{name}", "step", (f"{name!r} counts within each {epoch!r}: the step is "
                                                   f"({epoch} - first) x {int(it.max())} + {name}")
    return None


def name_rank(name: str, count: int) -> tuple[int, int, int]:
    """How to order several names of one quantity, best first: a per-step or per-batch one before
    a plain one before a per-epoch one (``loss_step``, ``loss``, ``loss_epoch``), then more values,
    then the shorter name."""
    t = tokens(name)
    grain = 0 if ("step" in t or "batch" in t) else (2 if "epoch" in t else 1)
    return grain, -count, len(name)


def _rank_total(table: Table, name: str) -> tuple:
    return name_rank(name, int(table.present[name].sum()))


def _local(names: list[str]) -> dict[str, str]:
    """Each name without the sections all of them sit in: a nested dump's ``info/learner/stats/``
    above ``total_loss`` and ``vf_loss`` says where the losses live, not which loss each is."""
    parts = [n.split("/") for n in names]
    k = 0
    while len(parts) > 1 and all(len(p) > k + 1 for p in parts) and len({p[k] for p in parts}) == 1:
        k += 1
    return {n: "/".join(p[k:]) for n, p in zip(names, parts, strict=True)}


def _choose_loss(table: Table, cols: list[str], side: str) -> tuple[Pick | None, list[str]]:
    """The loss among ``cols`` (all on one side: train or val) and the parts it was summed from."""
    lossy = [c for c in cols if is_lossish(tokens(c)) or set_metric_role(c)]
    local = _local(lossy)
    totals = [c for c in lossy if not qualifiers(tokens(local[c])) or set_metric_role(c)]
    role = "loss" if side == "train" else "val_loss"
    if totals:
        best = min(totals, key=lambda c: _rank_total(table, c))
        why = f"{best!r} is named a {'training' if side == 'train' else 'validation'} loss"
        if len(totals) > 1:
            why += f" (chosen over {', '.join(repr(c) for c in totals if c != best)}: finer grain or more values)"
        return Pick(role, (best,), "column", why), []
    if len(lossy) == 1:
        return Pick(role, (lossy[0],), "column", f"{lossy[0]!r} is the only loss-named column"), []
    if len(lossy) > 1:
        return sum_of_parts(table, lossy, role)
    if side == "train" and (players := _adversarial(cols)):
        pick, parts = sum_of_parts(table, players, role)
        return dataclasses.replace(pick, why=f"a GAN's two players, named without a loss word: {pick.why}"), parts
    if side == "train" and (total := total_of_parts(table, cols)) is not None:
        return total, []
    if side == "train" and (terms := detector_terms(cols)):
        pick, parts = sum_of_parts(table, terms, role)
        return dataclasses.replace(pick, why=f"a one-stage detector's loss terms, named by their target: {pick.why}"), parts
    ppl = [c for c in cols if any(x in PERPLEXITY for x in tokens(c)) and is_perplexity(table, c)]
    if ppl:
        return Pick(role, (ppl[0],), "log", f"only a perplexity was logged ({ppl[0]!r}): "
                    "the loss is its natural log"), []
    return None, []


def _adversarial(cols: list[str]) -> list[str]:
    """The columns of a GAN's generator and discriminator losses when both are logged (``Err_G`` beside
    ``Err_D``, ``G`` beside ``D``): one side alone is a letter, not a player."""
    sides = {c: adversarial_side(tokens(c)) for c in cols}
    found = [c for c, side in sides.items() if side is not None]
    return found if {sides[c] for c in found} == {"g", "d"} else []


def _simple(table: Table, cols: list[str], picks: list[Pick], skip: set[str]) -> None:
    taken = {c for p in picks for c in p.columns}
    tests = (
        ("loss_scale", is_loss_scale, "named a loss scale"),
        ("lr", is_lr, "named a learning rate"),
        ("grad_norm", is_grad_norm, "named a gradient norm"),
        ("epoch", is_epoch, "an epoch counter"),
    )
    for role, test, why in tests:
        if role in skip:
            continue
        for c in cols:
            t = tokens(c)
            if c not in taken and test(t) and (role != "epoch" or _integral(table.values[c][table.present[c]])):
                picks.append(Pick(role, (c,), "column", f"{c!r} is {why}"))
                taken.add(c)
                break


def infer(table: Table, *, loss: str | None = None, val_loss: str | None = None,
          step: str | None = None, named: dict[str, str] | None = None) -> Roles:
    """The roles of ``table``'s columns; raises KeyError naming an override column the table lacks.

    ``named`` maps other roles (``lr``, ``grad_norm``) to the columns the user named for them.
    """
    index, kind, why = pick_index(table, step)
    roles = Roles(index, kind, why)
    named = dict(named or {})
    for role, column in (("loss", loss), ("val_loss", val_loss), *named.items()):
        if column is not None and column not in table.values:
            raise KeyError(role, column)
    roles.picks += [Pick(role, (c,), "column", f"named by --{role.replace('_', '-')}") for role, c in named.items()]
    cols = [c for c in table.names if c != index]
    train = [c for c in cols if not is_val(tokens(c)) and c not in (loss, val_loss)]
    val = [c for c in cols if is_val(tokens(c)) and c not in (loss, val_loss)]
    if loss is not None:
        roles.picks.append(Pick("loss", (loss,), "column", "named by --loss"))
    else:
        chosen, _ = _choose_loss(table, train, "train")
        if chosen is not None:
            roles.picks.append(chosen)
    parts = [c for c in train if is_lossish(tokens(c))]
    if val_loss is not None:
        roles.picks.append(Pick("val_loss", (val_loss,), "column", "named by --val-loss"))
    else:
        _val_losses(table, val, roles, parts)
    _simple(table, [c for c in train if c not in roles.used()], roles.picks, skip=set(named))
    if not roles.picks and [c for c in table.names if c != roles.index] == ["value"]:
        # An optimizer's trace names its objective "value" and nothing else (R's optim, nnet and
        # multinom: "iter  10 value 72.296066"): what it minimizes, the loss.
        roles.picks.append(Pick("loss", ("value",), "column", "the one value an optimizer's trace prints at each "
                                "step ('iter 10 value 72.29'), its objective: read as the training loss "
                                "(--val-loss value reads it as the validation loss)"))
    if not any(p.role == "loss" or p.role.startswith("val_loss") for p in roles.picks):
        roles.picks += [Pick(role, (c,), "column", why) for role, c, why in set_named(table, roles.index)]
    if not any(p.role == "loss" or p.role.startswith("val_loss") for p in roles.picks):
        # An accuracy, error rate or reward named as such says more than a series that names nothing.
        roles.picks += proxy_picks(table, roles.index)
    if not any(p.role == "loss" or p.role.startswith("val_loss") for p in roles.picks) and (
            lone := lone_series(table, roles.index)) is not None:
        roles.picks.append(Pick("loss", (lone[0],), "column", lone[1]))
        if (twin := _held_out_twin(lone[0], val)) is not None:
            roles.picks.append(Pick("val_loss", (twin,), "column", f"{twin!r} is the held-out column of the quantity "
                                    f"read as the training loss ({lone[0]!r})"))
    if not roles.picks and step is None:
        _unnamed(table, roles)
    return roles


#: The widest unnamed table read as a counter and its values: a loop's ``print(i, loss, ...)`` or a
#: trainer's summary file without its header row (timm's ``summary.csv``: epoch, train loss, eval loss,
#: top-1, top-5); wider rows are a data file's features, not what a person watches of a run.
_UNNAMED_WIDTH = 6


def _unnamed(table: Table, roles: Roles) -> None:
    # Numbers printed alone (``print(loss)``) or after a counter (``print(i, loss)``) are what a
    # person watches of a run: its loss, unless they say otherwise.
    if table.shape == sequence.SHAPE and table.names == [sequence.UNNAMED]:
        roles.picks.append(Pick("loss", (sequence.UNNAMED,), "column", "the one series of a list of numbers "
                                "with no name: read as the training loss (--val-loss values reads it as "
                                "the validation loss)"))
        return
    # A leading column of words (``batch: 383 0.64 0.63``) holds no number: the counter is the first
    # column that does. A word between the numbers names them (``step 3 loss 0.5``): the text reader's.
    if table.shape != "delimited, no header":
        return
    filled = [bool(table.present[n].any()) for n in table.names]
    names = [n for n, f in zip(table.names, filled, strict=True) if f]
    if not 2 <= len(names) <= _UNNAMED_WIDTH or not all(filled[filled.index(True):]):
        return
    counter, value = names[:2]
    c, v = table.values[counter][table.present[counter]], table.values[value][table.present[value]]
    rising = bool(np.all(np.diff(c) > 0))
    # A first column that never changes counts nothing (MLflow's old ``0 29.31`` metric lines, whose
    # timestamp or step was never set): the rows are the steps.
    same = bool(c.size >= 3 and np.all(c == c[0]))
    # Whole numbers after the counter are another count (``print(epoch, batch, loss)``), unless some
    # are negative: no count is (an ELBO printed in exponent form, ``-2e+005``).
    if not (c.size >= 3 and _integral(c) and (rising or same or _restarts(c)) and v.size
            and (not _integral(v) or bool(np.any(v < 0)))):
        return
    if same:
        roles.index_why = (f"the first of the unnamed columns holds {c[0]:g} on every row: {counter!r} counts "
                           "nothing, the rows are the steps")
    elif rising:
        roles.index, roles.index_kind = counter, "step"
        roles.index_why = f"the first of the unnamed columns counts up (integral, rising): {counter!r} is the step"
    else:
        # A counter of the batches in an epoch, back to its start at every epoch: the rows are the steps.
        roles.index_why = (f"the first of the unnamed columns counts up and starts again from {int(c[0])} (the "
                           f"batches of each pass): {counter!r} is no step, the rows are")
    # ``print(i, loss, acc)``: a loop prints the loss it minimizes first, what it watches after.
    first = "" if len(names) == 2 else f" (the first of {len(names) - 1}; --loss names another)"
    roles.picks.append(Pick("loss", (value,), "column", f"the value printed after each step with no name, "
                            f"{value!r}{first}: read as the training loss (--val-loss {value} reads it as the "
                            "validation loss)"))


def _restarts(c: np.ndarray) -> bool:
    """Rising but for falls back to the first value, one pass of 3 rows or more at least: a counter that
    starts again every epoch (``0 1 3 5 7 9 0 1 3 ...``)."""
    d = np.diff(c)
    falls = np.flatnonzero(d <= 0)
    return falls.size > 0 and bool(np.all(c[falls + 1] == c[0])) and int(np.max(np.diff(
        np.concatenate(([-1], falls, [c.size - 1]))))) >= 3


def _val_losses(table: Table, val: list[str], roles: Roles, train_lossy: list[str]) -> None:
    lossy = [c for c in val if is_lossish(tokens(c)) or set_metric_role(c)]
    # A qualified validation loss whose words a training loss also has is a part of the loss
    # (``val/box_loss`` beside ``train/box_loss``), not a validation set of its own.
    part_words = {q for p in train_lossy if (q := qualifiers(tokens(p)))}
    val_parts = [c for c in lossy if qualifiers(tokens(c)) in part_words]
    lossy = [c for c in lossy if c not in val_parts]
    has_total = any(not qualifiers(tokens(c)) or set_metric_role(c) for c in lossy)
    loss = roles.get("loss")
    if len(val_parts) > 1 and not has_total:
        roles.picks.append(Pick("val_loss", tuple(val_parts), "sum",
                                "validation loss parts (matching the training loss's parts) logged "
                                "without a total: summed"))
    elif (len(val_parts) == 1 and not has_total and loss is not None and loss.how == "column"
          and qualifiers(tokens(loss.columns[0])) == qualifiers(tokens(val_parts[0]))):
        # The training loss is that one qualified loss (``dice_loss``): its validation column is no part.
        roles.picks.append(Pick("val_loss", (val_parts[0],), "column", f"{val_parts[0]!r} is the validation "
                                f"column of the training loss {loss.columns[0]!r}"))
    sets: dict[str | None, str] = {}
    for c in lossy:
        sets.setdefault(_set_name(c), c)
    if not sets and not val_parts:
        _val_fallback(table, val, roles)
        return
    if None in sets and not any(p.role == "val_loss" for p in roles.picks):
        roles.picks.append(Pick("val_loss", (sets[None],), "column", f"{sets[None]!r} is named a validation loss"))
    for name, c in sets.items():
        if name is not None:
            roles.picks.append(Pick(f"val_loss@{name}", (c,), "column", f"{c!r} is the loss of set {name!r}"))


def _set_name(column: str) -> str | None:
    """The validation set a loss column names (None: the unnamed one); ``<set>-<metric>`` by its set."""
    by_set = set_metric_role(column)
    if by_set is not None:
        return by_set[1].partition("@")[2] or None
    return val_set(tokens(column))


def _val_fallback(table: Table, val: list[str], roles: Roles) -> None:
    """A validation column named after the training loss's own word, or a validation perplexity."""
    loss = roles.get("loss")
    words = set(qualifiers(tokens(loss.columns[0]))) if loss is not None and loss.how == "column" else set()
    for c in val:
        shared = words & set(tokens(c))
        if shared:
            roles.picks.append(Pick("val_loss", (c,), "column",
                                    f"{c!r} is a validation column of the training loss's quantity "
                                    f"({', '.join(sorted(shared))})"))
            return
    ppl = [c for c in val if any(x in PERPLEXITY for x in tokens(c)) and is_perplexity(table, c)]
    if ppl:
        roles.picks.append(Pick("val_loss", (ppl[0],), "log", f"only a validation perplexity was logged "
                                f"({ppl[0]!r}): the validation loss is its natural log"))


def is_perplexity(table: Table, column: str) -> bool:
    """Whether a column named a perplexity holds one: exp of a cross-entropy is 1 or more (printed to
    two places, 0.995 or more). A negative "perplexity" (im2latex's ``perplexity -1.60``, a log
    probability) or one below 1 is some other quantity, and its log no loss."""
    values, present = table.column(column)
    return holds_perplexity(values[present])


def holds_perplexity(values: np.ndarray) -> bool:
    """Whether no finite value is below ``PERPLEXITY_MIN``: what a perplexity's values can be."""
    return bool(np.all(values[np.isfinite(values)] >= PERPLEXITY_MIN))


def _held_out_twin(column: str, val: list[str]) -> str | None:
    """The one held-out column that names the same quantity as ``column`` once the sides' words are left
    out (``test bits_per_dim`` beside ``train bits_per_dim``): what the run printed for both sets."""
    def quantity(name: str) -> tuple[str, ...]:
        return tuple(t for t in tokens(name) if t not in VAL and t not in TRAIN and t not in NEUTRAL)

    want = quantity(column)
    found = [c for c in val if want and quantity(c) == want]
    return found[0] if len(found) == 1 else None

