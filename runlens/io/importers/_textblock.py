"""Runs of console lines of one known shape, read as arrays: the text reader's fast path.

The text reader (:mod:`.text`) reads the log in blocks of lines. Once the
shape cache (:mod:`._lineplan`) holds a plan for the lines being read, one
regex built from that plan's literal text finds, in one pass over the whole
block, every line of that shape and its numbers; a run of such lines is then
appended to the series as arrays (pyarrow's RE2 finds the lines and casts their
numbers, rounding as ``float`` does; Python's ``re`` where pyarrow cannot; steps
checked for restarts with numpy), and every other line goes
through the line-by-line reader as before. Only plans whose lines change
nothing but the series qualify: a step read as an integer from the line (no
epoch, no running context), fields that map to distinct series other than the
epoch, and none of the words a warning needs in the text (such a line is read per line).
The result is the same either way; ``tests/importers/test_shape_cache.py``
and ``test_reader_text_blocks.py`` hold the two paths to that.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from runlens.io.importers._lineplan import Parser, Plan, pattern
from runlens.io.importers._logsignals import gated

if TYPE_CHECKING:
    from runlens.io.importers._names import Mapper

BLOCK_CHARS = 1 << 16  # the memory a block holds is a few times this (test_memory_does_not_grow_with_the_file)
MIN_RUN = 32  # shorter runs are cheaper line by line than as arrays
_PLANS_PER_BLOCK = 4  # regex passes over one block, at most (a log that changes shape every line)
_MAX_DIGITS = 18  # a step of more digits may not fit an int64: read line by line, which says so
_SPACE = r"(?: |[ \t]{2,})"  # what the line reader squeezes to one space
_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"  # _lineplan's number, not captured


def blocks(f: TextIO, max_line: int, size: int = BLOCK_CHARS) -> Iterator[list[str]]:
    """The lines of the text stream ``f`` without their newline, a block at a time, cut as
    ``f.readline(max_line)`` cuts them (a longer line comes in pieces of ``max_line`` characters)."""
    carry = ""
    while chunk := f.read(size):
        lines = (carry + chunk).split("\n")
        carry = lines.pop()
        out: list[str] = []
        while len(carry) >= max_line:  # no newline yet: readline would hand this piece over as a line
            out.append(carry[:max_line])
            carry = carry[max_line:]
        if lines and max(map(len, lines)) >= max_line:
            lines = [p for ln in lines for p in _pieces(ln, max_line)]
        yield lines + out if out else lines
    if carry:
        yield [carry]


def _pieces(line: str, max_line: int) -> list[str]:
    full = line + "\n"
    return [full[i:i + max_line].rstrip("\n") for i in range(0, len(full), max_line)]


@dataclass
class Run:
    """Consecutive lines of one plan: their steps and each field's values, in line order."""

    plan: Plan
    steps: np.ndarray
    fields: list[tuple[str, np.ndarray]]


class Matcher:
    """Which lines of a block have a batchable plan's shape, with their numbers as columns."""

    def __init__(self, parser: Parser, mapper: Mapper) -> None:
        self.parser, self.mapper = parser, mapper
        self._ok: dict[int, bool] = {}
        self._rx: dict[int, re.Pattern] = {}
        self._line_rx: dict[int, re.Pattern] = {}
        self._arrow: dict[int, str] = {}
        self.block: list[str] = []
        # plan -> (the lines it matches, how its numbers were found: ("arrow", ...) or ("re", columns))
        self._found: dict[int, tuple[np.ndarray, tuple[Any, ...]] | None] = {}

    def start(self, lines: list[str]) -> None:
        self.block, self._found = lines, {}

    def run(self, i: int) -> tuple[Plan | None, int]:
        """The plan of the run of lines from line ``i`` of the block on, among the recent batchable
        ones (the shapes the next lines most likely have), and its length; ``(None, 0)`` when none."""
        for _, plan in self.parser.recent:
            key = id(plan)
            ok = self._ok.get(key)
            if ok is None:
                ok = self._ok[key] = self._batchable(plan)
            if ok and (key in self._found or self._likely(plan, i)) and (k := self.run_at(plan, i)):
                return plan, k
        return None, 0

    def _likely(self, plan: Plan, i: int) -> bool:
        """Whether line ``i`` and the line a minimal run later have ``plan``'s shape: only then is the
        block searched for it (a validation line every 1,000 is read by itself, at no block's cost)."""
        rx = self._line_rx[id(plan)]
        j = min(i + MIN_RUN - 1, len(self.block) - 1)
        return rx.fullmatch(self.block[i]) is not None and rx.fullmatch(self.block[j]) is not None

    def _batchable(self, plan: Plan) -> bool:
        literals = self.parser.literals.get(id(plan))
        if literals is None or plan.formula != "int" or plan.epoch is not None or plan.source == "epoch":
            return False
        text = "".join(literals)
        if not plan.fields or gated(text):
            return False
        targets = [self.mapper(name, plan.eval_line) for name, _, _ in plan.fields]
        if len(set(targets)) < len(targets) or any(t[1] == "epoch" for t in targets):
            return False
        body = pattern(plan, literals, _literal)
        self._arrow[id(plan)] = _arrow_pattern(plan, literals)
        self._rx[id(plan)] = re.compile(rf"^(?:[^\S\n]*{body}[^\S\n]*|.*)$", re.M)
        self._line_rx[id(plan)] = re.compile(rf"\s*{body}\s*")
        return True

    def run_at(self, plan: Plan, i: int) -> int:
        """How many lines from line ``i`` of the block on have ``plan``'s shape (0 when unknown)."""
        found = self._matches(plan)
        if found is None:
            return 0
        hit = found[0]
        if not hit[i]:
            return 0
        miss = np.flatnonzero(~hit[i:])
        return int(miss[0]) if miss.size else len(hit) - i

    def _matches(self, plan: Plan) -> tuple[np.ndarray, tuple[Any, ...]] | None:
        key = id(plan)
        if key not in self._found:
            if len(self._found) >= _PLANS_PER_BLOCK:
                return None
            self._found[key] = self._search_arrow(plan) or self._search_re(plan)
        return self._found[key]

    def _search_arrow(self, plan: Plan) -> tuple[np.ndarray, tuple[Any, ...]] | None:
        """The block's lines of ``plan``'s shape and their numbers, by pyarrow (RE2 and its string to
        number casts, which round as ``float`` does); None where pyarrow cannot (a step beyond int64, a
        pattern RE2 refuses), and Python's ``re`` does it. RE2's ``\\s`` and ``\\d`` are ASCII only, so
        it matches a subset of the lines ``re`` would: the others go through the line reader."""
        used = {plan.steps[0]} | {j for _, j, _ in plan.fields if j >= 0}
        try:
            lines = pc.split_pattern(pa.array(["\n".join(self.block)]), "\n").flatten()
            found = pc.extract_regex(lines, pattern=self._arrow[id(plan)])
            ok = found.is_valid()
            hit = ok.to_numpy(zero_copy_only=False)
            if len(hit) != len(self.block):
                return None
            kept = found.filter(ok)
            cols = {j: pc.cast(kept.field(f"t{j}"), pa.int64() if j == plan.steps[0] else pa.float64())
                    .to_numpy(zero_copy_only=False) for j in used}
        except (pa.ArrowException, ValueError):
            return None
        return hit, ("arrow", np.cumsum(hit) - 1, cols)

    def _search_re(self, plan: Plan) -> tuple[np.ndarray, tuple[Any, ...]] | None:
        groups = self._rx[id(plan)].findall("\n".join(self.block))
        if not groups or len(groups) != len(self.block):  # one match a line, the fallback ``.*`` included
            return None
        cols = list(zip(*groups, strict=True)) if isinstance(groups[0], tuple) else [groups]
        return np.fromiter(map(bool, cols[0]), bool, len(groups)), ("re", cols)

    def take(self, plan: Plan, i: int, n: int) -> Run | None:
        """Lines ``i .. i+n`` of the block as arrays; None when a step is too long for an int64."""
        found = self._found[id(plan)]
        assert found is not None, "take() follows a run() that matched this plan"
        how = found[1]
        if how[0] == "arrow":
            a = int(how[1][i])
            steps = how[2][plan.steps[0]][a:a + n]
            fields = [(name, how[2][j][a:a + n] if j >= 0 else np.full(n, const)) for name, j, const in plan.fields]
            return Run(plan, steps, fields)
        cols = how[1]
        step_col = cols[plan.steps[0]][i:i + n]
        if max(map(len, step_col)) > _MAX_DIGITS:
            return None
        steps = np.fromiter(map(int, step_col), np.int64, n)
        fields = [(name, np.fromiter(map(float, cols[j][i:i + n]), np.float64, n) if j >= 0
                   else np.full(n, const)) for name, j, const in plan.fields]
        return Run(plan, steps, fields)


def _arrow_pattern(plan: Plan, literals: list[str]) -> str:
    """``plan``'s line as an RE2 pattern: the numbers it reads in named groups ``t<token>``."""
    used = {plan.steps[0]} | {j for _, j, _ in plan.fields if j >= 0}
    parts = [_literal(literals[0])]
    for i, lit in enumerate(literals[1:]):
        num = r"\d+" if i in plan.steps else _NUM
        parts += [f"(?P<t{i}>{num})" if i in used else f"(?:{num})", _literal(lit)]
    return rf"^[^\S\n]*{''.join(parts)}[^\S\n]*$"


def _literal(text: str) -> str:
    return _SPACE.join(map(re.escape, text.split(" ")))
