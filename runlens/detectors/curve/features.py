"""What the curve's stages read: the curve features, the validation sets, the class count, the ROC AUC.

The pure tests they combine (chance level, validation trend and jumps, level
shift) are in :mod:`runlens.stats`; these are the curve-specific readings of
a run's signals around them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from runlens.detectors._bugs import scalar_column
from runlens.io.reader.names import tokens
from runlens.io.reader.objective import PROXIES
from runlens.stats.chance import NO_CHANCE
from runlens.stats.progress import progress_test
from runlens.stats.robust import bucket_medians, mad_sd
from runlens.stats.trend import trend
from runlens.stats.variance import levene_compare, wander_test

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Series

#: Config keys that state the number of classes.
CLASS_KEYS = ("num_classes", "n_classes", "classes", "num_labels", "n_labels")
#: Scalars/evals columns that hold it, or the labels themselves.
CLASS_COLUMNS = ("num_classes", "n_classes")
LABEL_COLUMNS = ("label", "labels", "target")


# -- the number of classes ---------------------------------------------------------

def grad_norm_nonfinite(run: Run) -> bool:
    """Whether the logged global gradient norm holds a NaN or Inf (a null is no value): the signals drop
    a norm with no finite value at all, which a short log's collapse to 0 still needs to see."""
    t = run.scalars
    if t is None or "grad_norm" not in t.column_names:
        return False
    col = t.column("grad_norm")
    if not pa.types.is_floating(col.type):
        return False
    return bool(pc.any(pc.invert(pc.is_finite(col))).as_py())


def short_evidence(x: np.ndarray, kind: str) -> dict[str, Any]:
    """The evidence every short-log reading starts from: how many points, and which reading."""
    return {"points": int(x.size), "n_points": int(x.size), "short_log": True, "kind": kind}


def index_kind(run: Run) -> str:
    """How the run's index counts (config ``index_kind``): ``step`` (a recorder's, the default), ``epoch``
    or ``row`` (an imported log with no counter)."""
    return run.config.get("index_kind", "step") if isinstance(run.config, dict) else "step"


#: The first epoch a log counted in steps may open in and still be the start of training: 0 or 1, as a
#: trainer counts from 0 (Lightning) or from 1 (Keras). From 2 on, epochs came before the first line.
_FIRST_EPOCHS = 1


def late_index(run: Run, index: str) -> str:
    """``index``, or ``late_step`` for a log counted in steps that restart each epoch (a progress bar's
    ``Epoch 2: 100/6166``) whose epoch column opens at 2 or later: its steps begin near 0, but training
    began epochs before its first line, so it says nothing of how a run starts."""
    if index != "step":
        return index
    found = scalar_column(run, ("epoch",), min_points=1)
    return "late_step" if found is not None and float(found[1][0]) > _FIRST_EPOCHS else index


def role_how(config: Any, role: str) -> str | None:
    """How an imported log's reader made ``role`` (``import_roles``: ``column``, ``sum``, ``log``, or a
    proxy of :mod:`runlens.io.reader.objective`); None for a run that says nothing of it."""
    roles = config.get("import_roles") if isinstance(config, dict) else None
    pick = roles.get(role) if isinstance(roles, dict) else None
    return pick.get("how") if isinstance(pick, dict) else None


def proxied(run: Run) -> bool:
    """Whether the run's loss was read through a proxy (an accuracy's complement, an error rate, a
    reward's negative: :mod:`runlens.io.reader.objective`): it has no ln K."""
    return role_how(run.config, "loss") in PROXIES


def chance_classes(run: Run) -> tuple[int | None, str | None]:
    """:func:`stated_classes`, or ``NO_CHANCE`` for a loss read through a proxy."""
    return (NO_CHANCE, "a loss read through a proxy has no chance level") if proxied(run) else stated_classes(run)


def stated_classes(run: Run) -> tuple[int | None, str | None]:
    """``(K, source)``: the number of classes the run states, and where it says so."""
    k = _config_classes(run.config)
    if k is not None:
        return k
    for table in ("scalars", "evals"):
        for name in CLASS_COLUMNS:
            v = run.column(table, name)
            if v is not None and np.isfinite(v).any():
                kk = int(np.nanmedian(v))
                if 2 <= kk <= 10**6:
                    return kk, f"{table}.{name} column"
        for name in LABEL_COLUMNS:
            v = run.column(table, name)
            if v is None:
                continue
            v = v[np.isfinite(v)]
            if v.size >= 20 and np.all(v == np.round(v)):
                kk = int(np.unique(v).size)
                if 2 <= kk <= 10**6:
                    return kk, f"distinct values of the {table}.{name} column"
    return None, None


def _config_classes(config: Any, prefix: str = "config") -> tuple[int, str] | None:
    if not isinstance(config, Mapping):
        return None
    for key in CLASS_KEYS:
        v = config.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and 2 <= v <= 10**6:
            return v, f"{prefix}.{key}"
    for key in ("id2label", "label2id", "label_names", "classes_names"):
        v = config.get(key)
        if isinstance(v, (Mapping, list)) and 2 <= len(v) <= 10**6:
            return len(v), f"{prefix}.{key} (length)"
    for key, sub in config.items():  # one level down: config["model"]["num_classes"]
        if isinstance(sub, Mapping) and prefix.count(".") < 1:
            found = _config_classes(sub, f"{prefix}.{key}")
            if found is not None:
                return found
    return None


def curve_features(steps: np.ndarray, x: np.ndarray) -> dict[str, Any]:
    """The numbers every label reads, computed once (``x`` finite, ordered)."""
    n = x.size
    # The first steps, not the first 5%: a long run falls a long way in its
    # first 5%, and a learning rate too high throws the loss far above its
    # initial value within a step or two (hence also the very first loss).
    S = min(float(x[0]), float(np.median(x[:5])))
    E = float(np.median(x[-max(5, n // 10):]))
    pos, med = bucket_medians(x, int(np.clip(n // 5, 10, 200)))
    j = int(np.argmin(med))
    i_min = int(round(pos[j]))
    tail = x[i_min:]
    third = max(3, n // 3)
    late = x[-third:]
    scale = max(abs(S), abs(E), 1e-12)
    return {
        "points": int(n), "start_level": S, "end_level": E, "min_level": float(med[j]),
        "final_level": float(np.median(x[-max(5, n // 50):])),
        "min_step": int(steps[i_min]), "relative_drop": (S - E) / scale if S != 0 else 0.0,
        "late_spread": mad_sd(late), "scale": abs(S) if S != 0 else scale,
        # The noise around the best level: what the lowest bucket median's selection sits under its level by.
        "min_noise": mad_sd(x[max(0, i_min - max(5, n // 40)): i_min + max(5, n // 40) + 1]),
        "after_min_trend": trend(tail, steps[i_min:].astype(float)) if tail.size >= 10 else None,
        # Differences remove the trend; what is left is the step-to-step noise.
        # The middle third is the reference: the first holds the initial
        # transient, which calms down even in a run that never settles.
        "late_vs_early": levene_compare(np.diff(x[third:2 * third]), np.diff(late)),
        "wander": wander_test(late),
        # Progress before noise: the whole curve's trend, and the fall to its best level as such.
        "progress": progress_test(x),
        "fall_to_min_p": trend(x[:i_min + 1], max_points=200).p_decreasing if i_min >= 4 else 1.0,
    }


# -- validation ----------------------------------------------------------------------

def validation_sets(validation: Mapping[str, Series], last_step: int | None
                    ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{name: (steps, losses)}`` per eval set (``val_loss``, each ``val_loss@<set>``):
    finite values only, by step, up to the last training step."""
    out = {}
    for name, series in validation.items():
        s = series.finite()
        keep = np.ones(len(s), bool) if last_step is None else s.steps <= last_step
        out[name] = (s.steps[keep], s.values[keep])
    return out


def memo(f: dict[str, Any], key: str, compute: Callable[[], Any]) -> Any:
    """A reading of the curve that only some stages need, computed the first time one asks and
    kept in its features ``f`` (which live for one classification, with one set of parameters),
    so two stages that read it do not compute it twice."""
    if key not in f:
        f[key] = compute()
    return f[key]


def curve_evidence(f: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The curve features every verdict carries, plus ``extra``."""
    lev = f["late_vs_early"]
    ev = {k: f[k] for k in ("points", "start_level", "end_level", "min_level", "min_step",
                            "relative_drop", "late_spread")}
    ev.update(progress_p=f["progress"].p_decreasing, progress_effect=f["progress"].effect)
    ev.update(levene_late_vs_early=lev.statistic, levene_p_smaller=lev.p_smaller,
              variance_ratio_late_early=lev.ratio, wander_ratio=f["wander"]["ratio"],
              wander_p=f["wander"]["p"], wander_excess=f["wander"]["excess"],
              wander_monotone_p=f["wander"]["monotone_p"])
    ev.update(extra)
    return ev


#: The words that name an area under the ROC curve (``AUC``, ``val_auc``, ``roc_auc``, ``AUROC``).
_AUC_WORDS = frozenset({"auc", "auroc", "rocauc"})


def auc(run: Run) -> tuple[np.ndarray, np.ndarray] | None:
    """The ROC AUC a log prints, the held-out one first, as fractions: a ranking's score, 0.5 for any
    model that ranks no positive above a negative, whatever the classes' shares (an accuracy's chance
    level depends on them). One printed value is enough: ``None`` when no column is named so, or its
    values leave [0, 1]. A PR-AUC (``pr_auc``, ``aupr``) has no such level and is not read."""
    return _first_named(run, lambda words: bool(_AUC_WORDS & words) and not {"pr", "aupr", "prc"} & words,
                        lambda v: 0 <= float(v.min()) and float(v.max()) <= 1)


def _first_named(run: Run, named: Callable[[set[str]], bool], fits: Callable[[np.ndarray], bool] = lambda v: True
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(steps, values)`` of the first column, held-out ones first, whose name's words are ``named`` and
    whose values (1 point at least) ``fits``."""
    for table in ("evals", "scalars"):
        t = getattr(run, table, None)
        for c in t.column_names if t is not None else ():
            if named(set(tokens(c))) and (found := scalar_column(run, (c,), table, min_points=1)) is not None \
                    and fits(found[1]):
                return found[0], found[1]
    return None


#: The words that name a word or character error rate (``WER``, ``valid_CER``): edit distances over the
#: reference's length, exactly 100% for an empty output.
_RATE_WORDS = frozenset({"wer", "cer"})


def error_rate(run: Run) -> tuple[np.ndarray, np.ndarray] | None:
    """A word or character error rate the log prints (``WER``, ``valid CER``), the held-out one first,
    as printed (a fraction or a percentage); ``None`` when no column is named so."""
    return _first_named(run, lambda words: bool(_RATE_WORDS & words))


#: The words that name a correlation between predictions and labels whose no-skill value is 0 whatever
#: the classes' shares: Matthews' correlation (GLUE's CoLA metric) and Cohen's kappa.
_AGREEMENT_WORDS = frozenset({"mcc", "matthews", "kappa"})


def agreement(run: Run) -> tuple[np.ndarray, np.ndarray] | None:
    """A Matthews correlation or Cohen's kappa the log prints, the held-out one first; ``None`` when no
    column is named so or its values leave [-1, 1] (a percentage is not read)."""
    return _first_named(run, lambda words: bool(_AGREEMENT_WORDS & words),
                        lambda v: -1 <= float(v.min()) and float(v.max()) <= 1)


class Printed(NamedTuple):
    """What else a log prints that a short log's readings use: whether its gradient norm broke, its
    ROC AUC, its word or character error rate, the parts of its loss, its Matthews correlation or kappa,
    its gradient norm's finite values."""

    grads_broke: bool = False
    auc: tuple[np.ndarray, np.ndarray] | None = None
    rate: tuple[np.ndarray, np.ndarray] | None = None
    parts: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
    agreement: tuple[np.ndarray, np.ndarray] | None = None
    grads: tuple[np.ndarray, np.ndarray] | None = None


#: A log that prints nothing else.
NOTHING_ELSE = Printed()
