"""A cache of line shapes, so a million lines of one log are parsed like a handful.

A log prints the same few line shapes over and over with other numbers in
them. The *shape* of a line is the line with its digits deleted (one
``str.translate``, no regex); ``nan``/``inf`` words stay in it, so a line
whose loss turned NaN has a shape of its own, and there the word is a
constant of the plan. The first line of a shape goes through
the full parser (:func:`._textline.find_step`, :func:`._fields.read_field_spans`);
its result is kept as a *plan*: how the step is computed from which
numbers (a formula and number indices) and which number is which field.
Every later line of that shape only has its numbers found (one regex pass)
and the plan applied to them; a line whose count of numbers differs from
the plan's is parsed in full.

A result that cannot be replayed from the numbers alone is not cached: a
dict/JSON line, a Caffe ``net output`` line (its step is the previous
line's), a line with ANSI codes, or a line whose step or field numbers do
not coincide with number tokens. The cache is bounded (:data:`MAX_SHAPES`);
past it, new shapes are parsed in full every time. The results are the
same either way; a test holds the two paths to that.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final

from runlens.io.importers._clean import squeeze, strip_prefixes, unwrap
from runlens.io.importers._fields import read_field_spans
from runlens.io.importers._textline import (
    _EPOCH_HEADER,
    _NET_OUTPUT,
    Context,
    Line,
    enter_epoch,
    find_step,
    other_total,
    to_float,
)
from runlens.io.importers._textsteps import bar_evaluates, bar_pass, counted, running

MAX_SHAPES = 50_000
# The lookahead only makes positions that cannot start a number fail fast (a quarter faster).
_TOK = re.compile(r"(?=[-+.\d])[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)")
_NO_DIGITS = str.maketrans("", "", "0123456789")
_NUM_GROUP = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))"
_RECENT = 3  # plans whose own full-match regex is tried before the shape lookup

# argparse's dump of the run's settings, ``Namespace(batchSize=128, lr=0.1, ..., step=10)``: its
# ``step`` is a setting (a decay interval), not a training step, and none of its numbers were measured.
_SETTINGS = re.compile(r"^\s*(?:\w+\s*[:=]\s*)?Namespace\(\w+=")


class _Mark(Enum):
    """What the shape cache holds for a shape that has no plan."""

    UNCACHEABLE = "uncacheable"  # parse every such line in full
    SKIP = "skip"  # a line with no step: nothing to read


_UNCACHEABLE: Final = _Mark.UNCACHEABLE
_SKIP: Final = _Mark.SKIP


@dataclass(frozen=True)
class Plan:
    formula: str
    steps: tuple[int, ...]  # token indices the formula reads
    epoch: int | None  # token index of the epoch on the line
    eval_line: bool
    source: str
    fields: tuple[tuple[str, int, float], ...]  # (name, token index or -1, the constant when -1)
    ntoks: int


class Parser:
    """``parse(raw, ctx)`` -> ``(Line or None, [(name, value)])``, through the shape cache."""

    def __init__(self, step_key: str | None = None) -> None:
        self.step_key = step_key
        self.plans: dict[str, Plan | _Mark] = {}
        self.hits = self.misses = 0
        # Consecutive lines mostly share a shape: matching the last plans' literal text with one
        # anchored regex costs half of finding the shape and the numbers (benchmarks/text_reader.py).
        self.recent: list[tuple[re.Pattern, Plan]] = []
        self._rx: dict[int, re.Pattern | None] = {}
        self.literals: dict[int, list[str]] = {}  # a plan's text between its numbers (runs of lines read as arrays)

    def parse(self, raw: str, ctx: Context) -> tuple[Line | None, list[tuple[str, float]]]:
        raw = squeeze(raw)  # runs of spaces made single first: no pattern then backtracks on them
        if "\x1b" in raw:
            return self._full(raw, ctx)[:2]
        for rx, recent in self.recent:
            m = rx.fullmatch(raw)
            if m is not None:
                self.hits += 1
                return self._replay(recent, m.groups(), ctx)
        shape = raw.translate(_NO_DIGITS)
        plan = self.plans.get(shape)
        if plan is None:
            line, fields, made = self._full(raw, ctx)
            if len(self.plans) < MAX_SHAPES:
                self.plans[shape] = made
            self.misses += 1
            return line, fields
        if plan is _UNCACHEABLE:
            return self._full(raw, ctx)[:2]
        if plan is _SKIP:
            self.hits += 1
            return None, []
        toks = _TOK.findall(raw)
        if len(toks) != plan.ntoks:
            return self._full(raw, ctx)[:2]
        self.hits += 1
        self._remember(plan, raw)
        return self._replay(plan, toks, ctx)

    def _remember(self, plan: Plan, raw: str) -> None:
        """Put ``plan`` first among the recent ones, with the regex of its literal text."""
        key = id(plan)
        if key not in self._rx:
            literals = _TOK.split(raw)
            # Two numbers with nothing between could be split another way by a regex: not for these.
            ok = len(literals) == plan.ntoks + 1 and all(literals[1:-1])
            self._rx[key] = re.compile(pattern(plan, literals, re.escape)) if ok else None
            if ok:
                self.literals[key] = literals
        rx = self._rx[key]
        if rx is None:
            return
        self.recent = [(rx, plan)] + [(r, p) for r, p in self.recent if p is not plan][:_RECENT - 1]

    def _full(self, raw: str, ctx: Context) -> tuple[Line | None, list[tuple[str, float]], Plan | _Mark]:
        """The full parse, and the plan that replays it (or why it cannot be replayed)."""
        stripped = strip_prefixes(raw)
        text = unwrap(stripped)
        offset = len(raw) - len(text)
        # A line whose wrapped scalars were unwrapped is parsed in full each time: a plan indexes the raw line.
        cacheable = raw.endswith(stripped) and text == stripped
        line = None if _SETTINGS.match(text) else find_step(text, ctx, self.step_key)
        if line is None:
            if _NET_OUTPUT.search(text):
                return None, [], _UNCACHEABLE
            if m := _EPOCH_HEADER.match(text):
                return None, [], self._plan("header", (m.span(1),), None, False, "", (), raw, offset, cacheable)
            return None, [], _SKIP if cacheable else _UNCACHEABLE
        if line.fields is not None:
            return line, line.fields, _UNCACHEABLE
        spans = read_field_spans(line.rest, line.rest_at)
        fields = [(k, v) for k, v, _ in spans]
        plan = self._plan(line.formula, line.spans, line.epoch_span, line.eval_line, line.source,
                          tuple((k, sp) for k, _, sp in spans), raw, offset, cacheable and bool(line.formula))
        return line, fields, plan

    @staticmethod
    def _plan(formula: str, step_spans: tuple[tuple[int, int], ...], epoch_span: tuple[int, int] | None, ev: bool,
              source: str, field_spans: tuple[tuple[str, tuple[int, int]], ...], raw: str, offset: int,
              cacheable: bool) -> Plan | _Mark:
        if not cacheable:
            return _UNCACHEABLE
        index = {m.span(): i for i, m in enumerate(_TOK.finditer(raw))}

        def at(span: tuple[int, int]) -> int | None:
            return index.get((span[0] + offset, span[1] + offset))

        found = [at(sp) for sp in step_spans]
        steps = tuple(i for i in found if i is not None)
        epoch = at(epoch_span) if epoch_span is not None else None
        fields = []
        for k, sp in field_spans:
            i = at(sp)
            word = raw[sp[0] + offset:sp[1] + offset]
            if i is None and math.isfinite(to_float(word)):  # a nan/inf spelling is a constant of the shape
                return _UNCACHEABLE
            fields.append((k, -1, to_float(word)) if i is None else (k, i, 0.0))
        if len(steps) < len(found) or (epoch_span is not None and epoch is None):
            return _UNCACHEABLE
        return Plan(formula, steps, epoch, ev, source, tuple(fields), len(index))

    @staticmethod
    def _replay(plan: Plan, toks: Sequence[str], ctx: Context) -> tuple[Line | None, list[tuple[str, float]]]:
        f, s, ev = plan.formula, plan.steps, plan.eval_line
        if f == "header":
            enter_epoch(ctx, int(toks[s[0]]))
            return None, []
        ctx.headed = False
        epoch = int(toks[plan.epoch]) if plan.epoch is not None else None
        if f in ("bar", "counter") and ctx.last_step is not None and (
                ev or (f == "bar" and other_total(int(toks[s[1]]), epoch, ctx))
                or (f == "bar" and epoch is None and ctx.epoch is None and bar_evaluates(int(toks[s[1]]), ctx))):
            f, ev = "last_" + f, True  # as in find_step: an evaluation's counter counts its own batches
        step = _step(f, [int(toks[i]) for i in s], epoch, ctx)
        if f in ("mm", "last_mm", "end_epoch", "running"):
            epoch = int(toks[s[0]])
        elif f in ("counter", "bar", "last_counter", "last_bar"):
            epoch = epoch if epoch is not None else ctx.epoch
        fields = [(k, float(toks[i]) if i >= 0 else const) for k, i, const in plan.fields]
        partial = f in ("bar", "last_bar") and int(toks[s[0]]) < int(toks[s[1]])
        count = None
        if f == "mm" or (f in ("counter", "bar") and epoch is not None):
            count = (int(toks[s[-2]]), int(toks[s[-1]]))
        source = "eval counter" if f != plan.formula else plan.source
        return Line(step, "", ev, epoch, source, partial=partial, count=count), fields


def pattern(plan: Plan, literals: list[str], literal: Callable[[str], str]) -> str:
    """The regex of a plan's lines: its text (each piece through ``literal``) around its numbers; the
    numbers read as integers (step, epoch) match digits only, so ``step 5.5`` is not replayed as one."""
    ints = set(plan.steps) | ({plan.epoch} if plan.epoch is not None else set())
    parts = [literals[0]]
    for i, lit in enumerate(literals[1:]):
        parts += [r"(\d+)" if i in ints else _NUM_GROUP, literal(lit)]
    parts[0] = literal(parts[0])
    return "".join(parts)


def _step(formula: str, n: list[int], epoch: int | None, ctx: Context) -> int:
    """The step by the same formulas as :func:`._textline.find_step`, context updates included."""
    if formula == "int":
        return n[0]
    if formula == "mm":
        ctx.per_epoch = n[2]
        return (n[0] - 1) * n[2] + n[1] - 1
    if formula == "last_mm":
        return ctx.last_step if ctx.last_step is not None else (n[0] - 1) * n[2] + n[1] - 1
    if formula == "last_int":
        return ctx.last_step if ctx.last_step is not None else n[0]
    if formula in ("counter", "bar"):
        e = epoch if epoch is not None else ctx.epoch
        if e is None:
            return bar_pass(n[0], n[1], ctx) if formula == "bar" else n[0]
        return counted(e, n[0], n[1], ctx)
    if formula in ("last_counter", "last_bar"):
        return ctx.last_step if ctx.last_step is not None else _step(formula[5:], n, epoch, ctx)
    if formula == "running":
        return running(n[0], n[1], ctx)
    if formula == "end_epoch":
        return n[0] * ctx.per_epoch - 1 if ctx.per_epoch else n[0]
    raise ValueError(f"unknown step formula {formula!r}")
