"""What every importer shares: series of (step, value), their merge into
format-v1 rows, and the single place that writes an imported run.

An importer reads its source into :class:`Imported` (named series, not
rows), because sources log metrics at different steps: a ``val_loss`` every
500 steps, ``lr`` on some steps only. :func:`write_imported` then aligns
them on the steps where a training loss exists, says what it had to drop,
and :mod:`runlens.io.importers.memory` builds the run's Arrow tables in memory
from them; only ``runlens import`` writes a run to disk (:func:`write_imported`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.reader.names import NOT_A_SIGNAL, PERPLEXITY, tokens
from runlens.io.reader.roles import holds_perplexity

if TYPE_CHECKING:
    from recorders.writer import RunWriter

# Columns of the scalars table the format names; everything else is a user scalar.
SCALAR_COLUMNS = ("lr", "grad_norm", "epoch", "loss_scale", "step_skipped")
INT_COLUMNS = frozenset({"epoch", "step_skipped"})
_RESERVED = frozenset({"step", "time", "loss", "val_loss"})


@dataclass
class Series:
    """One metric as logged: parallel arrays of steps, values and (maybe) times."""

    steps: np.ndarray
    values: np.ndarray
    times: np.ndarray | None = None

    @classmethod
    def from_lists(cls, steps: Sequence[float], values: Sequence[float], times: Sequence[float] | None = None,
                   ) -> Series:
        t = None if times is None else np.asarray(times, dtype=np.float64)
        return cls(np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=np.float64), t)


#: One aligned table of a run (:func:`plan`): the step/time frame, the key column's values and
#: presence mask, and ``{column: (values, present)}`` for the others.
Rows = tuple[Series, np.ndarray, np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]


@dataclass
class Imported:
    """A source read into memory: training series, eval series, notes."""

    kind: str
    source: Path
    train: dict[str, Series] = field(default_factory=dict)  # "loss" plus scalar columns
    evals: dict[str, Series] = field(default_factory=dict)  # "val_loss" plus eval columns
    warnings: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    layers: list[dict[str, Any]] = field(default_factory=list)  # run.json layers, depth order
    layer_rows: dict[str, dict[str, Series]] = field(default_factory=dict)  # layer -> column -> series
    name: str | None = None
    seed: int | None = None
    events: list[tuple[int, str, float, str]] = field(default_factory=list)  # (step, kind, value, message)
    index_why: str | None = None  # why the index is what config["index_kind"] says, when the importer knows
    # The exception the source says the run died of (run.json's ``error``: type, message, traceback, step):
    # such a run is ``crashed``, not ``finished``.
    error: dict[str, Any] | None = None


#: A source read once: ``take(None)`` is the run read by default, ``take(i)`` run ``i`` (1-based) of
#: several. Each call builds its own :class:`Imported` (fresh lists and dicts; arrays shared, never written)
#: from that one read: judging every run of a log of twenty must not parse it twenty-one times.
Take = Callable[[int | None], Imported]


def record_runs(config: dict[str, Any], runs: Sequence[tuple[str, Sequence[int] | None]], chosen: int,
                note: str) -> None:
    """Say in ``config["import_runs"]`` that the source holds several runs and which one was read.

    ``runs`` is each run's label and ``(first, last)`` step (None when the importer does not know it
    without reading the run); ``note`` is the import warning that says the same in words. This is the
    one place a command learns how many runs a log holds (``runlens analyze`` judges each).
    """
    config["import_runs"] = {
        "count": len(runs), "read": chosen, "note": note,
        "runs": [{"index": i, "label": label, "steps": None if steps is None else [int(steps[0]), int(steps[1])]}
                 for i, (label, steps) in enumerate(runs, 1)],
    }


def column_name(raw: str) -> str:
    """A metric name made safe as a Parquet column (``train/acc`` -> ``train_acc``)."""
    name = re.sub(r"[^0-9A-Za-z_]+", "_", raw).strip("_") or "value"
    if name in _RESERVED:
        name = f"{name}_"
    return name


def require_file(path: Path, kind: str) -> None:
    """Refuse a ``path`` that is not one regular file, saying what it is (a folder is not "missing")."""
    if path.is_dir():
        raise ImportFailedError(f"{path}: is a directory; the {kind} importer reads one file: "
                                "name the file inside it")
    if not path.is_file():
        raise ImportFailedError(f"{path}: " + ("not a regular file" if path.exists() else "no such file"))


def as_float(value: int | float) -> float:
    """``float(value)``, with an integer beyond a float's range as +-inf rather than ``OverflowError``."""
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def parse_float(text: str | None) -> float | None:
    """A float from a log cell; None for an empty cell; NaN/Inf kept as data."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def last_per_step(s: Series) -> tuple[Series, int]:
    """Keep the last value logged for each step (a resumed run logs steps again)."""
    if len(s.steps) == 0 or np.all(s.steps[1:] > s.steps[:-1]):
        return s, 0  # already one value a step, in order: a million steps need no sort
    rev = s.steps[::-1]
    uniq, first_in_rev = np.unique(rev, return_index=True)
    idx = len(s.steps) - 1 - first_in_rev
    dup = len(s.steps) - len(uniq)
    times = None if s.times is None else s.times[idx]
    return Series(uniq, s.values[idx], times), dup


def _align(base: Series, other: Series) -> tuple[np.ndarray, int, np.ndarray]:
    """``other``'s values on ``base``'s steps, how many it logged elsewhere, and where it is present."""
    pos = np.searchsorted(base.steps, other.steps)
    pos_c = np.minimum(pos, len(base.steps) - 1)
    hit = (pos < len(base.steps)) & (base.steps[pos_c] == other.steps)
    out = np.full(len(base.steps), np.nan)
    present = np.zeros(len(base.steps), dtype=bool)
    out[pos_c[hit]] = other.values[hit]
    present[pos_c[hit]] = True
    return out, int((~hit).sum()), present


SIGNAL_COLUMNS = ("grad_norm", "loss_scale")


def is_val_set(name: str) -> bool:
    """Whether ``name`` is a validation-loss column: ``val_loss`` or ``val_loss@<set>``."""
    return name == "val_loss" or name.startswith("val_loss@")


def val_set_column(set_name: str) -> str:
    """The evals column of a named validation set (``val_loss@<set>``, the set's name kept readable)."""
    clean = re.sub(r"[^0-9A-Za-z_.-]+", "_", set_name).strip("_") or "set"
    return f"val_loss@{clean}"


def _table(series: dict[str, Series], key: str, label: str, warnings: list[str], *,
           keys: tuple[str, ...] | None = None, extra_steps: np.ndarray | None = None) -> Rows:
    """Rows keyed on the steps of ``series[key]`` (or of the union of ``keys``).

    Returns ``(steps, times, key values, key present, {column: (values, present)})``;
    a key value that is not present is written as null, never NaN (NaN is data).
    """
    keys = keys or (key,)
    bases = []
    for k in keys:
        if k in series:
            s, dup = last_per_step(series[k])
            if dup:
                warnings.append(f"{label}: {dup} repeated steps of {k!r} (a resumed run, or several logs "
                                "per optimizer step); kept the last value of each")
            bases.append(s)
    pool = [b.steps for b in bases] + ([] if extra_steps is None else [np.asarray(extra_steps, np.int64)])
    steps = np.concatenate(pool) if pool else np.empty(0, np.int64)
    if len(pool) > 1 or not np.all(steps[1:] > steps[:-1]):  # one series in order is its own union
        steps = np.unique(steps)
    frame = Series(steps, np.full(len(steps), np.nan))
    times = np.full(len(steps), np.nan)
    for b in bases:
        if b.times is not None:
            t, _, hit = _align(frame, Series(b.steps, b.times))
            times = np.where(np.isnan(times) & hit, t, times)
    frame.times = None if np.isnan(times).all() else times
    key_vals = np.full(len(steps), np.nan)
    key_present = np.zeros(len(steps), dtype=bool)
    columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    dropped: list[str] = []
    for name, s in series.items():
        s, _ = last_per_step(s)
        values, missed, present = _align(frame, s)
        if name == key:
            key_vals, key_present = values, present
            continue
        if missed:
            dropped.append(f"{name!r} ({missed})")
        if present.any():
            columns[name] = (values, present)
    if dropped:
        shown = ", ".join(dropped[:6]) + (f" and {len(dropped) - 6} more" if len(dropped) > 6 else "")
        warnings.append(f"{label}: values logged at steps without {' or '.join(repr(k) for k in keys)} "
                        f"not imported: {shown}")
    return frame, key_vals, key_present, columns


def _no_loss_note(imp: Imported, warnings: list[str]) -> tuple[tuple[str, ...], np.ndarray | None]:
    """The train keys (or, with none, the eval steps) to build scalar rows on when the source
    logged no training loss; refuses a source without any training signal."""
    signals = [c for c in SIGNAL_COLUMNS if c in imp.train and len(imp.train[c].steps)]
    vals = [c for c in imp.evals if is_val_set(c) and len(imp.evals[c].steps)]
    # A clock or a record of an extreme starts at inf by convention ("eta: inf", "best: inf"): no signal.
    broken = [c for c, s in imp.train.items() if len(s.values) and not np.isfinite(s.values).all()
              and NOT_A_SIGNAL.isdisjoint(tokens(c))]
    if not signals and not vals and broken:
        # Nothing names a loss, but a quantity the loop prints went NaN or Inf: a NaN makes every other
        # signal meaningless, so the log is read for it (nonfinite_metric), not refused for its names.
        warnings.append(f"the source logged no training loss, but {', '.join(repr(c) for c in broken[:3])} "
                        "print NaN or Inf: read for the non-finite values alone, the loss curve cannot be judged")
        return tuple(c for c in imp.train if len(imp.train[c].steps)), None
    if not signals and not vals:
        found = ", ".join(sorted(imp.train) + sorted(imp.evals)) or "nothing"
        raise ImportFailedError(f"{imp.source}: no training loss, gradient norm, loss scale or validation "
                                f"loss found (found: {found}); map the loss column/tag explicitly")
    held = ", ".join(signals + vals)
    warnings.append(f"the source logged no training loss (it holds {held}): the loss column is all null, "
                    "so the loss curve cannot be judged")
    base = tuple(c for c in imp.train if len(imp.train[c].steps))
    if base:
        return base, None
    return (), np.unique(np.concatenate([imp.evals[c].steps for c in vals]))


def plan(imp: Imported) -> tuple[dict[str, Any], Rows, Rows | None]:
    """``(config, scalars rows, evals rows or None)`` of ``imp``: the aligned tables a run is made of.

    A source without a training loss but with a gradient norm, loss scale or
    validation loss gets an all-null ``loss`` (the format requires the
    column) and a warning; a source with none of these is refused.
    """
    warnings = list(imp.warnings)
    has_loss = "loss" in imp.train and len(imp.train["loss"].steps) > 0
    train_keys, eval_steps = (("loss",), None) if has_loss else _no_loss_note(imp, warnings)
    config = dict(imp.config)
    config["imported_from"] = {"kind": imp.kind, "path": str(imp.source)}
    train = _table(imp.train, "loss", "scalars", warnings, keys=train_keys, extra_steps=eval_steps)
    eval_src = _unmeasured(imp, warnings)
    val_keys = tuple(k for k in eval_src if is_val_set(k))
    if val_keys and "val_loss" not in eval_src:
        # Only named sets: the first logged is the primary val_loss too, so a reader that knows only
        # val_loss still sees a validation curve; every set stays in its own val_loss@<set> column.
        first = min(val_keys, key=lambda k: (int(eval_src[k].steps.min()) if len(eval_src[k].steps) else 0,
                                             val_keys.index(k)))
        eval_src = {**eval_src, "val_loss": eval_src[first]}
        val_keys = ("val_loss", *val_keys)
        warnings.append(f"evals: {len(val_keys) - 1} named validation sets and no unnamed one; "
                        f"val_loss is the first, {first!r}; each set is in its val_loss@<set> column")
    if not val_keys and (ppl := _perplexity(imp.evals)):
        # As the table reader does (roles.py): a held-out perplexity logged alone is exp(val loss).
        with np.errstate(divide="ignore", invalid="ignore"):
            eval_src = {**imp.evals, "val_loss": Series(imp.evals[ppl].steps, np.log(imp.evals[ppl].values),
                                                        imp.evals[ppl].times)}
        val_keys = ("val_loss",)
        warnings.append(f"evals: only a validation perplexity was logged ({ppl!r}): val_loss is its natural log")
    evals = _table(eval_src, "val_loss", "evals", warnings, keys=val_keys) if val_keys else None
    if evals is None and (held := tuple(k for k in eval_src if len(eval_src[k].steps))):
        # A held-out accuracy or metric logged without a loss is data too: kept beside an all-null
        # val_loss (the format requires the column), as a training log without a loss is.
        evals = _table(eval_src, "val_loss", "evals", warnings, keys=held)
        warnings.append(f"evals: no validation loss was logged (the source holds {', '.join(held)}): the "
                        "val_loss column is all null")
    if train[0].times is None:
        warnings.append("the source has no timestamps: the time columns hold NaN")
    config["import_warnings"] = warnings
    return config, train, evals


def _unmeasured(imp: Imported, warnings: list[str]) -> dict[str, Series]:
    """``imp.evals`` without a validation loss printed as exactly 0 at every evaluation (2 or more) of
    a run whose training loss is above 0: no held-out loss is exactly 0 while the model is wrong on its
    training data, so the evaluation never ran and its zeroed accumulator was printed (a demo that
    skips validation). Read as such, it would be a leak or a validation loss that never falls."""
    train = imp.train.get("loss")
    if train is None or not (np.isfinite(train.values) & (train.values > 0)).any():
        return imp.evals
    zero = [k for k, s in imp.evals.items() if is_val_set(k) and len(s.values) >= 2 and (s.values == 0).all()]
    for k in zero:
        warnings.append(f"evals: {k} is 0 at each of its {len(imp.evals[k].values)} evaluations while the "
                        "training loss is not: read as an evaluation that never ran, not imported")
    return {k: s for k, s in imp.evals.items() if k not in zero}


def _perplexity(evals: dict[str, Series]) -> str | None:
    """The first validation column named a perplexity (``val_perplexity``, ``val_ppl``) that holds one
    (no finite value below 1: a negative "perplexity" is a log probability, its log no loss)."""
    return next((k for k in evals if PERPLEXITY & set(tokens(k)) and len(evals[k].steps)
                 and holds_perplexity(evals[k].values)), None)


def write_imported(imp: Imported, out_dir: str | Path) -> Path:
    """Write ``imp`` as a format-v1 run at ``out_dir`` (``runlens import`` only); the run's path."""
    from recorders.writer import RunWriter  # the training-side writer: only a run written to disk needs it

    out = Path(out_dir)
    if (out / "run.json").exists():
        raise ImportFailedError(f"{out} already holds a run; choose a new OUT_RUN directory")
    config, train, evals = plan(imp)
    writer = RunWriter(out, name=imp.name or out.name, config=config, seed=imp.seed,
                       flush_every=1_000_000, flush_seconds=1e9, heartbeat=False)
    try:
        if imp.layers:
            writer.set_layers(imp.layers)
        _write_rows(writer, train, is_eval=False)
        if evals is not None:
            _write_rows(writer, evals, is_eval=True)
        _write_layers(writer, imp)
        for step, kind, value, message in imp.events:
            writer.add_event(step, kind, message, value=value)
    except BaseException as exc:
        writer.close(status="crashed", error={"type": type(exc).__name__, "message": str(exc),
                                              "traceback": "", "step": None})
        raise
    writer.close(status="crashed" if imp.error else "finished", error=imp.error)
    return out


def _write_rows(writer: RunWriter, table: Rows, *, is_eval: bool) -> None:
    base, key_vals, key_present, columns = table
    names = list(columns)
    vals = [columns[n][0].tolist() for n in names]
    pres = [columns[n][1].tolist() for n in names]
    times = base.times.tolist() if base.times is not None else None
    keys = [v if p else None for v, p in zip(key_vals.tolist(), key_present.tolist(), strict=True)]
    add = writer.add_eval if is_eval else writer.add_scalars
    for i, (step, value) in enumerate(zip(base.steps.tolist(), keys, strict=True)):
        extra = {}
        for n, v, p in zip(names, vals, pres, strict=True):
            if p[i]:
                extra[n] = int(v[i]) if n in INT_COLUMNS and math.isfinite(v[i]) else v[i]
        t = math.nan if times is None else times[i]
        add(step, value, time=t, **extra)


def _write_layers(writer: RunWriter, imp: Imported) -> None:
    """Per-layer rows: one ``add_layers`` call per step, every known layer in it."""
    if not imp.layer_rows:
        return
    steps = sorted({int(s) for cols in imp.layer_rows.values() for ser in cols.values() for s in ser.steps})
    lookup = {
        (layer, col): dict(zip(ser.steps.tolist(), ser.values.tolist(), strict=True))
        for layer, cols in imp.layer_rows.items() for col, ser in cols.items()
    }
    names = [layer["name"] for layer in imp.layers if layer["name"] in imp.layer_rows]
    for step in steps:
        present = [n for n in names if step in lookup.get((n, "grad_norm"), {}) or step in lookup.get((n, "weight_norm"), {})]
        if not present:
            continue
        grad = _masked([lookup.get((n, "grad_norm"), {}).get(step) for n in present])
        weight = _masked([lookup.get((n, "weight_norm"), {}).get(step) for n in present])
        writer.add_layers(step, present, grad, weight)


def _masked(values: list[float | None]) -> np.ma.MaskedArray:
    """float32 values with None masked: the writer stores masked entries as null, NaN stays NaN."""
    mask = [v is None for v in values]
    return np.ma.masked_array([0.0 if v is None else v for v in values], mask=mask, dtype=np.float32)
