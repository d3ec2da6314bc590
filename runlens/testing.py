"""Help for contributors: build a run, run one detector, check a detector against the contract.

Like scikit-learn's ``check_estimator``, :func:`check_detector` holds a
detector class to the contract every built-in detector is held to
(``runlens.detectors._base`` states it): documented in the fixed sections,
keyword-only parameters stored verbatim, declared and validated, the columns
it reads declared in ``needs``, deterministic, and never crashing on odd but
legal runs (no step, three steps, every value NaN, every value null).

    from runlens.testing import build_run, run_detector, check_detector

    run = build_run(loss=[2.3, 1.1, float("nan")], grad_norm=[1.0, 1.2, 9e9])
    outcome, findings = run_detector("nonfinite_loss", run)
    assert [f.code for f in findings] == ["nonfinite_loss"]
    assert check_detector(MyDetector) == []

Runs are built in memory with the format's own column types
(:mod:`recorders.format`), never written to disk.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa

from recorders import format as fmt
from runlens.analysis import analyze
from runlens.detectors import REGISTRY, Detector
from runlens.detectors._base import DOC_SECTIONS
from runlens.diagnosis import DetectorOutcome, Finding
from runlens.errors import UsageError
from runlens.io.run import Run

__all__ = ["build_run", "check_detector", "format_table", "odd_runs", "run_detector", "run_meta"]

Values: TypeAlias = "Sequence[float] | np.ndarray | pa.Array"


def build_run(*, loss: Values | None = None, steps: Sequence[int] | np.ndarray | None = None,
              val_loss: Values | None = None, val_steps: Sequence[int] | np.ndarray | None = None,
              scalars: Mapping[str, Values] | None = None, evals: Mapping[str, Values] | None = None,
              layers: Mapping[str, np.ndarray] | None = None, layer_names: Sequence[str] = (),
              layer_steps: Sequence[int] | np.ndarray | None = None,
              events: Sequence[Mapping[str, Any]] = (), status: str = "finished", name: str = "synthetic",
              meta: Mapping[str, Any] | None = None, tables: Mapping[str, Any] | None = None,
              path: str | None = None, warnings: Sequence[str] = (), t0: float = 0.0, step_time: float = 1.0,
              **scalar_columns: Values) -> Run:
    """A :class:`Run` in memory.

    ``loss`` and any keyword such as ``lr=`` or ``grad_norm=`` become ``scalars`` columns at
    ``steps`` (0, 1, 2... by default); ``val_loss`` and ``evals`` columns sit at ``val_steps``.
    ``layers`` maps a per-layer column (``grad_norm``, ``weight_norm``...) to a (steps x layers)
    matrix over ``layer_steps`` and ``layer_names``, which are listed in run.json input first.
    ``events`` are rows of the events table (``step``, ``kind``, ``message``...). The ``time``
    columns are ``t0 + step * step_time`` (seconds).

    ``tables`` gives whole tables in long form by name (``scalars``, ``evals``, ``layers``,
    ``events``), each with its own ``step`` column, for layouts the arguments above do not make
    (ragged layers, empty tables, times of one's own): a ``pa.Table`` is taken as it is, column values
    are typed by :func:`format_table`, ``None`` is no table. ``meta`` replaces the whole run.json;
    ``path`` is the run's path (``name`` by default); ``warnings`` are the loader's warnings it carries.
    """
    columns = {**({} if loss is None else {"loss": loss}), **(scalars or {}), **scalar_columns}
    n = len(next(iter(columns.values()))) if columns else 0
    step = _steps(steps, n, "steps")
    clock = {"step": step, "time": t0 + step * step_time}
    table = format_table("scalars", {**clock, **columns}) if columns else None
    ev = {**({} if val_loss is None else {"val_loss": val_loss}), **(evals or {})}
    vsteps = _steps(val_steps, len(next(iter(ev.values()))) if ev else 0, "val_steps")
    eval_clock = {"step": vsteps, "time": t0 + vsteps * step_time}
    eval_table = format_table("evals", {**eval_clock, **ev}) if ev else None
    if layers and not layer_names:
        layer_names = [f"l{j}.weight" for j in range(np.shape(next(iter(layers.values())))[1])]
    built = {"scalars": table, "evals": eval_table,
             "layers": _layers(layers, list(layer_names), layer_steps) if layers else None,
             "events": _events(events) if events else None}
    built.update(_whole_tables(tables or {}, built))
    info = dict(meta) if meta is not None else run_meta(name, status=status, layers=layer_names)
    return Run(path=name if path is None else path, meta=info, status=status, scalars=built["scalars"],
               evals=built["evals"], layers=built["layers"], events=built["events"], warnings=tuple(warnings))


def _whole_tables(tables: Mapping[str, Any],
                  built: Mapping[str, pa.Table | None]) -> dict[str, pa.Table | None]:
    out = {}
    for key, given in tables.items():
        if key not in built:
            raise UsageError(f"tables has {key!r}, not one of {', '.join(built)}")
        if built[key] is not None:
            raise UsageError(f"the {key} table is given twice: in tables= and by the other arguments")
        out[key] = given if given is None or isinstance(given, pa.Table) else format_table(key, given)
    return out


def run_meta(name: str = "synthetic", *, status: str = "finished", layers: Sequence[str] = (),
             **extra: Any) -> dict:
    """A run.json with every key the format requires (values of an unremarkable run); ``extra`` keys
    (``host=``, ``config=``, ``error=``...) replace or add to those values."""
    return {
        "format": fmt.FORMAT, "format_version": fmt.FORMAT_VERSION, "run_id": "0" * 32, "name": name,
        "status": status, "started_at": "2026-01-01T00:00:00+00:00", "ended_at": None,
        "heartbeat_at": None, "flush_every": 100, "flush_seconds": 30.0, "host": "synthetic", "pid": 1,
        "config": {}, "seed": 0, "environment": {}, "error": None,
        "layers": [{"name": n, "index": i, "module": n.rsplit(".", 1)[0], "kind": "Linear", "shape": [4, 4],
                    "numel": 16} for i, n in enumerate(layers)],
        "attempts": [{"started_at": "2026-01-01T00:00:00+00:00", "first_step": 0}],
        **extra,
    }


def run_detector(detector: str | Detector, run: Run) -> tuple[DetectorOutcome, list[Finding]]:
    """Run one detector (a code or an instance) on ``run``, after the steps it depends on
    (the curve, and whatever it names in ``depends``), inside the analysis's own guard:
    the outcome says whether it ran, was skipped (and why) or crashed."""
    det = REGISTRY[detector]() if isinstance(detector, str) and detector in REGISTRY else detector
    diagnosis = analyze(run, detectors=[det])
    mine = [o for o in diagnosis.outcomes if o.code == _code(det)]
    if not mine:
        raise UsageError(f"{_code(det)!r} did not run: is it a detector?")
    return mine[0], [f for f in diagnosis.findings if f.code == _code(det)]


def odd_runs() -> dict[str, Callable[[], Run]]:
    """Odd but legal runs no detector may crash on (name -> builder)."""
    names = ["a.weight", "b.weight"]
    nan = np.full(50, np.nan)

    def layered(n: int, fill: float) -> dict[str, np.ndarray]:
        return {k: np.full((n, 2), fill) for k in ("grad_norm", "weight_norm", "update_norm")}

    return {
        "no step": lambda: build_run(name="empty"),
        "three steps": lambda: build_run(loss=[2.3, 2.2, 2.1], lr=[1e-3] * 3, grad_norm=[1.0] * 3,
                                         layers=layered(3, 1.0), layer_names=names),
        "every value NaN": lambda: build_run(loss=nan, lr=nan, grad_norm=nan, val_loss=[np.nan] * 2,
                                             val_steps=[10, 20], layers=layered(10, np.nan),
                                             layer_names=names, layer_steps=range(0, 50, 5)),
        "every value null": lambda: Run(path="null", meta=run_meta("null"), status="finished", scalars=pa.table({
            "step": pa.array(range(40), pa.int64()), "time": pa.array(np.arange(40.0)),
            **{c: pa.array([None] * 40, pa.float64()) for c in ("loss", "lr", "grad_norm")}})),
        "crashed at step 0": lambda: build_run(loss=[2.3], status="crashed"),
    }


def check_detector(cls: type[Detector], *, healthy: Run | None = None) -> list[str]:
    """What in ``cls`` breaks the detector contract (empty: nothing). ``healthy``: a run on which
    it must report nothing (defaults to a long, smoothly decaying curve with steady gradients)."""
    problems = _check_declaration(cls)
    try:
        det = cls()
    except Exception as exc:  # noqa: BLE001 - any failure to construct is the finding itself
        return [*problems, f"cannot be built with its defaults: {type(exc).__name__}: {exc}"]
    for label, build in odd_runs().items():
        outcome, _ = run_detector(det, build())
        if outcome.state == "crashed":
            problems.append(f"crashes on a run with {label}: {outcome.reason}")
    run = healthy if healthy is not None else _healthy()
    first, again = run_detector(det, run), run_detector(cls(), run)
    if repr(first) != repr(again):
        problems.append("not deterministic: two runs on the same data differ")
    if first[1]:
        problems.append(f"reports {[f.code for f in first[1]]} on a healthy run")
    return problems


def _check_declaration(cls: type[Detector]) -> list[str]:
    out = []
    sections = cls.doc_sections()
    out += [f"docstring lacks the {s!r} section" for s in DOC_SECTIONS if not sections.get(s)]
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        if p.kind is not p.KEYWORD_ONLY:
            out.append(f"parameter {p.name!r} is not keyword-only")
        if p.default is p.empty:
            out.append(f"parameter {p.name!r} has no default")
            continue
        if p.name not in cls.constraints:
            out.append(f"parameter {p.name!r} has no constraint")
        try:
            if getattr(cls(**{p.name: p.default}), p.name, object()) != p.default:
                out.append(f"parameter {p.name!r} is not stored verbatim")
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            out.append(f"parameter {p.name!r} at its default fails: {type(exc).__name__}: {exc}")
    return out


def _healthy() -> Run:
    rng = np.random.default_rng(0)
    n, names = 2000, [f"l{i}.weight" for i in range(4)]
    t = np.arange(n) / n
    loss = (0.3 + 2.0 * np.exp(-5 * t)) * np.exp(0.02 * rng.standard_normal(n))
    lsteps = np.arange(0, n, 20)
    grow = 1 + 0.05 * lsteps[:, None] / n
    layers = {"grad_norm": np.exp(0.1 * rng.standard_normal((lsteps.size, 4))),
              "weight_norm": 10.0 * grow * np.ones((1, 4)), "update_norm": 1e-3 * 10.0 * grow * np.ones((1, 4))}
    vsteps = np.arange(100, n, 100)
    val = 0.35 + 2.0 * np.exp(-5 * vsteps / n)
    return build_run(loss=loss, lr=np.full(n, 1e-3), grad_norm=np.exp(0.1 * rng.standard_normal(n)),
                     val_loss=val, val_steps=vsteps, layers=layers, layer_names=names, layer_steps=lsteps)


def _code(det: Any) -> str:
    return getattr(det, "code", str(det))


def _steps(steps: Sequence[int] | np.ndarray | None, n: int, what: str) -> np.ndarray:
    out = np.arange(n, dtype=np.int64) if steps is None else np.asarray(list(steps), dtype=np.int64)
    if out.size != n:
        raise UsageError(f"{what} has {out.size} values for {n} rows")
    return out


def format_table(table: str, columns: Mapping[str, Any]) -> pa.Table:
    """One table of the format from column values, each spec column with its exact type.

    Masked entries of a numpy masked array become nulls; a pyarrow array keeps its own type
    (the way to build a column off the format, such as a fractional ``epoch``)."""
    known = fmt.FIELDS[table]
    arrays: dict[str, Any] = {}
    for name, values in columns.items():
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            arrays[name] = values
            continue
        typ = known.get(name, pa.float64())
        data = values.tolist() if isinstance(values, np.ndarray) else list(values)
        if pa.types.is_dictionary(typ):
            arrays[name] = pa.array(data, pa.string()).dictionary_encode()
        else:
            arrays[name] = pa.array(data, typ)
    return pa.table(arrays)


def _layers(matrices: Mapping[str, np.ndarray], names: list[str],
            steps: Sequence[int] | np.ndarray | None) -> pa.Table:
    shape = np.shape(next(iter(matrices.values())))
    step = _steps(steps, shape[0], "layer_steps")
    cols: dict[str, Any] = {"step": np.repeat(step, len(names)), "layer": names * shape[0]}
    for key, m in matrices.items():
        # a masked array keeps its mask: masked entries are the nulls of a layer not logged that step
        m = m.astype(float) if np.ma.isMaskedArray(m) else np.asarray(m, dtype=float)
        if m.shape != shape:
            raise UsageError(f"layers[{key!r}] is {m.shape}, not {shape} like the others")
        cols[key] = m.reshape(-1)
    return format_table("layers", cols)


def _events(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    keys = ("step", "time", "kind", "layer", "value", "message")
    filled = [{"time": 0.0, "layer": "", "value": None, "message": "", **r} for r in rows]
    return format_table("events", {k: [r.get(k) for r in filled] for k in keys})
