"""TensorBoard event files (``events.out.tfevents.*``) to format v1.

Scalars come from ``simple_value`` (``SummaryWriter.add_scalar``, TF1) and
from 0-d ``tensor`` summaries (TF2 ``tf.summary.scalar``, Keras). Every
value is kept: no reservoir sampling, NaN and Inf stay data.

Tags are mapped to the format's columns by the reader's vocabulary of
names (:mod:`runlens.io.reader.names`, the words every importer goes by;
among several tags of one role, a per-step one before a per-epoch one; the
caller overrides each with ``loss_tag=`` etc.); the other scalar tags
become user columns of the scalars table, or of the evals table when their
words say validation. A folder with event files in
subfolders (Keras writes ``train/`` and ``validation/``) prefixes each tag
with its subfolder: ``validation/epoch_loss``.

Histograms become per-layer norms only where that is exact: a
``HistogramProto`` carries ``sum_squares``, so ``sqrt(sum_squares)`` *is*
the L2 norm of the histogrammed tensor. That is used when the tag names a
parameter (``fc.weight``, ``weights/fc.weight``) or its gradient
(``grad/fc.weight``, ``fc.weight.grad``, ``fc.weight/grad``). TF2 histogram
tensors hold only bucket counts, so they are skipped with a note.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.importers._common import Imported, Series, column_name
from runlens.io.importers._eventproto import ProtoError, parse_event
from runlens.io.importers._tfrecord import read_events
from runlens.io.reader.names import is_val, role_of, tokens
from runlens.io.reader.roles import name_rank

if TYPE_CHECKING:
    from types import SimpleNamespace

_ROLE_FOLDERS = frozenset({"train", "validation", "val", "eval", "test"})

_GRAD = re.compile(r"^(?:grads?|gradients?)[/.](.+)$|^(.+?)(?:[/.](?:grads?|gradients?))$")
_WEIGHT = re.compile(r"^(?:weights?|params?|parameters?)/(.+)$")
_PARAM = re.compile(r"^(.+[./](?:weight|bias))$")
_NUMERIC_DTYPES = {1: "float_val", 2: "double_val", 3: "int_val", 9: "int64_val", 19: "half_val"}


def find_event_files(source: Path) -> list[tuple[str, Path]]:
    """``(subfolder prefix, file)`` for every event file at or below ``source``."""
    if source.is_file():
        # Keras writes train/ and validation/ event files: one of them named alone keeps its role.
        role = source.parent.name.lower()
        return [(source.parent.name + "/" if role in _ROLE_FOLDERS else "", source)]
    if not source.is_dir():
        raise ImportFailedError(f"{source}: no such file or folder")
    files = sorted(source.rglob("*tfevents*"))
    if not files:
        raise ImportFailedError(f"{source}: no TensorBoard event files (events.out.tfevents.*) here")
    out = []
    for f in files:
        rel = f.parent.relative_to(source).as_posix()
        out.append(("" if rel == "." else rel + "/", f))
    return out


class _Others:
    """Events the fast path could not decode (TF2 tensor summaries, histograms), parsed by
    :mod:`._eventproto`: no ``tensorboard`` package needed."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.scalars: dict[str, tuple[list[int], list[float], list[float]]] = defaultdict(lambda: ([], [], []))
        self.histos: dict[str, dict[int, tuple[float, int]]] = defaultdict(dict)
        self.skipped: dict[str, int] = defaultdict(int)
        self.no_proto = 0  # events that are not well-formed protobuf
        self.negative = 0

    def __call__(self, data: bytes) -> None:
        try:
            ev = parse_event(data)
        except ProtoError:
            self.no_proto += 1
            return
        if ev.values is None:
            return
        if ev.step < 0:
            # Event.step is int64 on the wire: a step written as uint64 past 2**63 reads negative.
            # It is no step of format v1, so the event is skipped, never imported wrapped.
            self.negative += 1
            return
        for v in ev.values:
            tag = self.prefix + v.tag
            if v.kind == "simple_value":
                self._scalar(tag, ev, v.simple_value)
            elif v.kind == "histo":
                self._histo(tag, ev.step, v.histo)
            elif v.kind == "tensor" and (scalar := _tensor_scalar(v.tensor)) is not None:
                self._scalar(tag, ev, scalar)
            else:
                self.skipped[f"{v.kind or 'empty'}{'/' + v.plugin if v.plugin else ''}"] += 1

    def _scalar(self, tag: str, ev: SimpleNamespace, value: float) -> None:
        steps, walls, values = self.scalars[tag]
        steps.append(ev.step)
        walls.append(ev.wall_time)
        values.append(value)

    def _histo(self, tag: str, step: int, h: SimpleNamespace) -> None:
        if h.num > 0 and h.sum_squares == 0 and (h.max != 0 or h.min != 0):
            self.skipped["histo without sum_squares"] += 1
            return
        self.histos[tag][step] = (math.sqrt(h.sum_squares), int(h.num))


def _tensor_scalar(t: SimpleNamespace) -> float | None:
    if len(t.tensor_shape.dim) != 0:
        return None
    field = _NUMERIC_DTYPES.get(t.dtype)
    if field is None:
        return None
    vals = getattr(t, field)
    if len(vals):
        return float(vals[0])
    if t.tensor_content and t.dtype in (1, 2, 3, 9, 19):
        fmt = {1: "<f4", 2: "<f8", 3: "<i4", 9: "<i8", 19: "<f2"}[t.dtype]
        return float(np.frombuffer(t.tensor_content, dtype=fmt)[0])
    return None


def _role(series: dict[str, Series], given: str | None, role: str, words: str) -> str | None:
    """The tag that takes ``role``: the one given, else the best of those the reader's vocabulary
    names so (:func:`runlens.io.reader.names.role_of`); a loss by the table reader's order
    (:func:`runlens.io.reader.roles.name_rank`), another role by its fewest words first
    (``grad_norm/total`` before ``grad_norm/layer1.weight``)."""
    tags = list(series)
    if given is not None:
        if given not in tags:
            raise ImportFailedError(f"no {words} tag {given!r}; scalar tags are: {', '.join(sorted(tags)[:40])}")
        return given
    found = [t for t in tags if role_of(t)[1] == role]
    if role.startswith("val_loss") or role == "loss":
        return min(found, key=lambda t: name_rank(t, len(series[t].steps)), default=None)
    return min(found, key=lambda t: (len(tokens(t)), name_rank(t, len(series[t].steps))), default=None)


def _layer_of(tag: str) -> tuple[str, str] | None:
    """``(parameter name, 'grad_norm' | 'weight_norm')`` when ``tag`` names one, else None."""
    if m := _GRAD.match(tag):
        return (m.group(1) or m.group(2)).replace("/", "."), "grad_norm"
    if m := _WEIGHT.match(tag):
        return m.group(1).replace("/", "."), "weight_norm"
    if m := _PARAM.match(tag):
        return m.group(1).replace("/", "."), "weight_norm"
    return None


def read(source: str | Path, *, loss_tag: str | None = None, val_loss_tag: str | None = None,
         lr_tag: str | None = None, grad_norm_tag: str | None = None) -> Imported:
    """Read every event file at or below ``source`` into an :class:`Imported`."""
    src = Path(source)
    scalars: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = defaultdict(list)
    histos: dict[str, dict[int, tuple[float, int]]] = {}
    imp = Imported(kind="tensorboard", source=src)
    skipped: dict[str, int] = defaultdict(int)
    for prefix, path in find_event_files(src):
        others = _Others(prefix)
        fast, notes = read_events(path, others)
        imp.warnings.extend(notes)
        for tag, arrays in fast.by_tag().items():
            scalars[prefix + tag].append(arrays)
        for tag, (steps, walls, values) in others.scalars.items():
            scalars[tag].append((np.asarray(steps, np.int64), np.asarray(walls), np.asarray(values)))
        for tag, by_step in others.histos.items():
            histos.setdefault(tag, {}).update(by_step)
        for kind, n in others.skipped.items():
            skipped[kind] += n
        if others.negative:
            imp.warnings.append(f"{path.name}: {others.negative} events with a negative step (a step "
                                "past 2**63 written unsigned reads so): skipped")
        if others.no_proto:
            imp.warnings.append(f"{path.name}: {others.no_proto} events are not well-formed protobuf: skipped")
    for kind, n in sorted(skipped.items()):
        imp.warnings.append(f"{n} summary values of kind {kind!r} have no place in a run log: skipped")
    series = {tag: _merge(parts) for tag, parts in scalars.items()}
    _map_scalars(imp, series, loss_tag, val_loss_tag, lr_tag, grad_norm_tag)
    _map_histograms(imp, histos)
    return imp


def _merge(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Series:
    steps, walls, values = (np.concatenate(c) for c in zip(*parts, strict=True))
    order = np.argsort(walls, kind="stable") if len(parts) > 1 else slice(None)
    return Series(steps[order], values[order], walls[order])


def _map_scalars(imp: Imported, series: dict[str, Series], *tags_given: str | None) -> None:
    tags = list(series)
    roles = {"loss": _role(series, tags_given[0], "loss", "loss"),
             "val_loss": _role(series, tags_given[1], "val_loss", "validation-loss"),
             "lr": _role(series, tags_given[2], "lr", "learning-rate"),
             "grad_norm": _role(series, tags_given[3], "grad_norm", "gradient-norm"),
             "epoch": _role(series, None, "epoch", "epoch")}
    # A qualified validation loss (``val/box_loss``) may be a part of the loss rather than a set's: with
    # every tag known, the table reader tells them apart (importers.table.reinfer), not a name alone.
    imp.config["import_tags"] = {k: v for k, v in roles.items() if v}
    used = set(roles.values())
    for role, tag in roles.items():
        if tag is not None:
            (imp.evals if role == "val_loss" else imp.train)[role] = series[tag]
    for tag in tags:
        if tag in used:
            continue
        is_eval = is_val(tokens(tag))
        (imp.evals if is_eval else imp.train)[column_name(tag)] = series[tag]


def _map_histograms(imp: Imported, histos: dict[str, dict[int, tuple[float, int]]]) -> None:
    unmapped = []
    numel: dict[str, int] = {}
    for tag, by_step in histos.items():
        target = _layer_of(tag)
        if target is None:
            unmapped.append(tag)
            continue
        name, column = target
        steps = sorted(by_step)
        imp.layer_rows.setdefault(name, {})[column] = Series.from_lists(steps, [by_step[s][0] for s in steps])
        numel.setdefault(name, by_step[steps[-1]][1])
    if unmapped:
        imp.warnings.append(f"{len(unmapped)} histogram tags name no parameter or gradient "
                            f"({', '.join(sorted(unmapped)[:5])}): skipped")
    if imp.layer_rows:
        imp.layers = [{"name": n, "index": i, "module": n.rsplit(".", 1)[0] if "." in n else "",
                       "kind": "unknown", "shape": [], "numel": numel[n]} for i, n in enumerate(imp.layer_rows)]
        imp.warnings.append("per-layer norms are sqrt(sum_squares) of the histograms; layer depth order is "
                            "the order the tags first appear, module kinds and shapes are unknown")
