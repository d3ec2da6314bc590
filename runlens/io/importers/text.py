"""Any console training log: the lines that carry a training step, and the numbers on them.

The reader streams the file line by line (bounded memory: what it keeps
is the numbers, 16 bytes per value, never the text), so a 2 GB log is
read in one pass. Each line is cleaned and searched for a step marker
(:mod:`runlens.io.importers._textline` has them: ``step N``, ``Epoch e/N``
headers over per-batch counters, ``Epoch(train) [e][i/N]``, a dict holding
a step key, ``epoch N`` when nothing else is there, ...). Lines without
one (tracebacks, summaries, bars without a metric) are counted and skipped.

Field names take their roles by the reader's vocabulary
(:mod:`runlens.io.reader.names`, through :mod:`runlens.io.importers._names`);
every other number is kept as a user scalar (or an evals column when its
name, or its line, says validation). ``--step``,
``--loss`` and ``--val-loss`` name the fields explicitly.

Several runs in one log (a restart from step 0, a second ``Epoch 1/N``):
each is kept apart; the last is imported unless ``run=N`` (1-based) picks
another, and the warnings list them all.
"""

from __future__ import annotations

import functools
import io
import math
import re
from array import array
from collections import Counter
from pathlib import Path

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.bounded import in_int64
from runlens.io.importers import anyline, embedded
from runlens.io.importers._carry import Carry
from runlens.io.importers._common import Imported, Take, require_file
from runlens.io.importers._evalline import (
    BARE_MIN,
    KEYED_MIN,
    NUMBERED_MIN,
    eval_at_last_step,
    in_section,
    lr_line,
    number_lines,
    opens_section,
    under_header,
)
from runlens.io.importers._lineplan import Parser, Plan
from runlens.io.importers._linetypes import Context, Line
from runlens.io.importers._names import Mapper
from runlens.io.importers._ranks import one_rank
from runlens.io.importers._roundline import BEST_NEXT
from runlens.io.importers._runacc import RunAcc, put_line
from runlens.io.importers._splitrecords import join_split
from runlens.io.importers._taketext import take_run
from runlens.io.importers._textblock import MIN_RUN, Matcher, blocks
from runlens.io.importers._textfile import check_text_file
from runlens.io.reader.setnamed import rising_fractions
from runlens.io.reader.source import open_limited

_MAX_LINE = 1 << 20  # a longer "line" is read in pieces, so one huge line cannot exhaust memory
_DIGIT = re.compile(r"\d")


def _scan(path: Path, mapper: Mapper, step_key: str | None, encoding: str = "utf-8", numbered: bool = False,
          bare: bool = False, proxy: bool = False, joined: bool = False) -> tuple[list[RunAcc], int, int, Counter]:
    """Every run of the log, how many lines were read and skipped, and which step markers were seen;
    ``numbered``: the lines that carry a training loss are counted as the steps (a log without any);
    ``bare``: so are the values alone on their lines, as that loss; ``proxy``: or what a loop watches;
    ``joined``: a record printed over two lines is read as one (:mod:`._splitrecords`)."""
    sc = _Scanner(mapper, step_key)
    with io.TextIOWrapper(open_limited(path), encoding=encoding, errors="replace") as f:  # .gz read as is
        for lines in one_rank(blocks(f, _MAX_LINE)):
            lines = join_split(lines) if joined else lines
            sc.block(number_lines(lines, mapper, sc.markers, bare, proxy) if numbered else lines)
    sc.close_tail()
    sc.markers["_partial"] = sc.partial
    return [r for r in sc.runs if r.rows] or sc.runs[:1], sc.n, sc.skipped, sc.markers


class _Scanner:
    """The reader's state over the lines of a log: runs so far, context, counts."""

    def __init__(self, mapper: Mapper, step_key: str | None) -> None:
        self.runs, self.mapper = [RunAcc(1)], mapper
        self.ctx, self.parser = Context(), Parser(step_key)
        self.matcher = Matcher(self.parser, mapper)
        self.n = self.skipped = self.partial = 0
        self.early: list[tuple[Line, list[tuple[str, float]]]] = []  # evaluations before any training step
        self.counted = False  # a training line counted steps (not epochs): an epoch line then summarizes
        self.section = False  # under a held-out block's header (``Test Metrics:``), until a blank or step line
        self.carry = Carry()  # an inner counter counted on across epochs; the step a loss line under it is at
        self.markers: Counter = Counter()
        self.tail: tuple[Line, list[tuple[str, float]], int] | None = None  # a progress line no epoch end closed

    def close_tail(self) -> None:
        """The log ended inside its first epoch (the run died in it): its last progress line, the running
        mean so far, is the only record of the run and is kept (after closed epochs it is not needed)."""
        (hit, fields, n), cur = self.tail or (None, [], 0), self.runs[-1]
        if hit is not None and not cur.rows:
            put_line(cur, hit, fields, self.mapper)
            cur.last_line, cur.last_step, cur.first_step = n, hit.step, cur.first_step or hit.step
            self.partial -= 1

    def block(self, lines: list[str]) -> None:
        """The lines of a block: runs of one batchable shape as arrays, the others one by one."""
        self.matcher.start(lines)
        i, end = 0, len(lines)
        while i < end:
            plan, k = (None, 0) if self.ctx.restart or self.ctx.repeat_next else self.matcher.run(i)
            if k >= MIN_RUN and plan is not None:
                k = self._run(plan, i, k)
            if k < MIN_RUN:  # not worth arrays, or the run stops here: this line by itself
                self.line(lines[i])
                k = 1
            i += k

    def _run(self, plan: Plan, i: int, k: int) -> int:
        """Lines ``i .. i+k`` of one plan, up to a restart of the step; how many were taken."""
        cur = self.runs[-1]
        if not plan.eval_line and (not cur.rows or cur.first_step is None) or self.carry.offset:
            return 0  # the run's first training line sets its start, an offset counter is counted on: line by line
        run = self.matcher.take(plan, i, k)
        if run is None:
            return 0
        if not plan.eval_line:
            prev = np.concatenate((np.asarray([cur.last_step]), run.steps[:-1]))
            back = np.flatnonzero((run.steps < prev) & (run.steps <= cur.first_step))
            if back.size:  # the step went back to the start: that line opens a new run, line by line
                k = int(back[0])
                if k < MIN_RUN:
                    return 0
                run.steps, run.fields = run.steps[:k], [(name, v[:k]) for name, v in run.fields]
            self.carry.trained(int(run.steps[-1]), None, run.fields)
            self.ctx.last_step = cur.last_step = int(run.steps[-1])
            cur.other_train += k
            cur.by_epoch += k * (plan.source == "epoch")
            cur.watch.trained()
            if not all(np.isfinite(v).all() for _, v in run.fields):
                bad = int(np.flatnonzero(~np.all([np.isfinite(v) for _, v in run.fields], axis=0))[0])
                cur.watch.parts(int(run.steps[bad]), [(name, float(v[bad])) for name, v in run.fields], self.mapper)
        for name, values in run.fields:
            target = self.mapper(name, plan.eval_line)
            pair = cur.series.get(target)
            if pair is None:
                pair = cur.series[target] = (array("q"), array("d"))
                cur.names.setdefault(target[1], name)
            pair[0].frombytes(run.steps.tobytes())
            pair[1].frombytes(values.tobytes())
        self.n += k
        cur.rows += k
        cur.last_line = self.n
        self.markers[plan.source] += k
        self.parser.hits += k
        return k

    def _early(self, cur: RunAcc) -> None:
        """The evaluations logged before the first training step (llm.c's of the initial model)."""
        for hit, fields in self.early:
            put_line(cur, hit, fields, self.mapper)
            self.markers[hit.source] += 1
        self.early.clear()

    def line(self, raw: str) -> None:
        """One line read by itself."""
        self.n += 1
        ctx, runs, n = self.ctx, self.runs, self.n
        # BEST_NEXT ends in a colon: that, and its word, are checked before the regex (a case-insensitive
        # search costs microseconds on a long line, on every line read by itself).
        if ("est" in raw or "EST" in raw) and raw.rstrip().endswith(":") and BEST_NEXT.search(raw):
            ctx.repeat_next = True
        if self.carry.trail is not None and (under := self.carry.under_step(raw)) is not None:
            put_line(runs[-1], *under, self.mapper)
            self.markers["under step"] += 1
            return
        if not _DIGIT.search(raw):
            runs[-1].watch.see(raw, ctx.last_step, stepless=True)
            self.skipped += bool(raw.strip())
            self.section = bool(raw.strip()) and (self.section or opens_section(raw))
            return
        prev, headed = ctx.last_step, ctx.headed
        ctx.headed = False
        hit, fields = self.parser.parse(raw.strip(), ctx)
        if ctx.restart:
            ctx.restart = False
            if runs[-1].rows:
                runs.append(RunAcc(n))  # a second "Epoch 1/N": the next run begins here
        # A count on a training line ("number of nan iterations: 2") covers the steps since the last line:
        # it is put at the last step seen, as a warning between lines is; a progress line inside an epoch
        # ("42/100 ... loss: nan") is about its own batch.
        interval = hit.step - prev if hit is not None and not hit.eval_line and prev is not None else None
        named = hit is not None
        section, self.section = self.section, opens_section(raw) or (self.section and not named)
        if not named:
            hit, fields, named = self._unstepped(raw, section, headed)
        said = runs[-1].watch.see(raw, hit.step if hit is not None and hit.partial else prev, interval,
                                  stepless=hit is None)
        if hit is None:
            if prev is not None and (rate := lr_line(raw)) is not None and math.isfinite(rate):
                # The rate the next steps train at, put at the last step: no line of its own to tally.
                runs[-1].put(False, "lr", "learning rate", prev, rate)
                return
            self.skipped += bool(raw.strip())
            return
        if not named and ctx.last_step is None:
            self.early.append((hit, fields))  # kept when a training step follows (not a summary's)
            return
        if hit.partial:
            self.partial += 1
            if not runs[-1].rows:  # only a run with no row of its own keeps it (close_tail)
                self.tail = (hit, fields, n)
            if not said:
                runs[-1].watch.partial(hit, fields, self.mapper)
            return
        self.tail = None
        if ctx.repeat_next and not hit.eval_line:
            ctx.repeat_next = False
            if runs[-1].last_step is not None and hit.step <= runs[-1].last_step:
                self.markers["best repeated"] += 1  # the best round's line again: a recorded point, not a new one
                return
        self._data(hit, fields, n)

    def _unstepped(self, raw: str, section: bool, headed: bool) -> tuple[Line | None, list[tuple[str, float]], bool]:
        """A line that names no step: in a held-out block, a validation line at the last step, or the line
        under an epoch header (``hit``, its fields, and whether it names its own step as a header's does)."""
        ctx = self.ctx
        if section and ctx.last_step is not None:
            hit, fields = in_section(raw, ctx.last_step)
            if hit is not None:
                return hit, fields, False
        hit, fields = eval_at_last_step(raw, ctx.last_step)
        if hit is None and headed and ctx.epoch is not None:
            hit, fields = under_header(raw, ctx.epoch)
            ctx.headed = ctx.headed or hit is None  # tfjs' "eta=0.0 ===>" leaves the header to the next line
            return hit, fields, hit is not None
        return hit, fields, False

    def _data(self, hit: Line, fields: list[tuple[str, float]], n: int) -> None:
        """A line with a step and numbers: into the current run, or a new one when the step restarted."""
        ctx, markers, runs = self.ctx, self.markers, self.runs
        if not fields:
            self.skipped += 1
            return
        cur = runs[-1]
        if hit.source != "epoch":  # before the bound: the counted-on step is the one the arrays hold
            self.carry.count_on(hit, cur.rows, cur.last_step, markers)
        if not in_int64(hit.step):  # the arrays hold int64: such a step is unknown, its line skipped
            markers["_beyond"] += 1
            return
        if hit.source == "epoch" and ctx.last_step is not None and self.counted:
            # An epoch summary ("Epoch 1: total training loss ...") in a log that counts steps: its
            # numbers belong to the last step, the epoch number is not a step (nor a restart).
            if not hit.eval_line:
                self.carry.summary(hit.step)
            hit.step = ctx.last_step
            put_line(cur, hit, fields, self.mapper)
            markers["epoch summary"] += 1
            return
        if (not hit.eval_line and cur.rows and cur.last_step is not None and hit.step < cur.last_step
                and cur.first_step is not None and hit.step <= cur.first_step):
            cur = RunAcc(n)  # the step went back to the start: a restart, or a settings line before the run
            runs[-1:] = [cur] if runs[-1].settings_only() else [runs[-1], cur]
        if self.early and not hit.eval_line:
            self._early(cur)
        put_line(cur, hit, fields, self.mapper)
        cur.last_line = n
        if not hit.eval_line:
            self.counted = self.counted or hit.source != "epoch"
            if not math.isfinite(sum(v for _, v in fields)):
                cur.watch.parts(hit.step, fields, self.mapper)
            cur.watch.trained()
            cur.tally(hit)
            self.carry.trained(hit.step, ctx.last_step, fields)
            ctx.last_step = hit.step
            cur.first_step = hit.step if cur.first_step is None else cur.first_step
            cur.last_step = hit.step
        markers[hit.source] += 1


def _accuracy_like(runs: list[RunAcc]) -> bool:
    """Values alone on their lines that are fractions ending a tenth higher than they start or more:
    an accuracy printed by the loop, not a loss that rose (a loss stuck at ln 2 = 0.693 jitters up
    and down by far less)."""
    values = np.array([v for r in runs for v in r.series.get((False, "loss"), ((), ()))[1]], dtype=float)
    return rising_fractions(values, rise=1.1)


def read(source: str | Path, *, step: str | None = None, loss: str | None = None,
         val_loss: str | None = None, run: int | None = None) -> Imported:
    """Read a console log; ``step``/``loss``/``val_loss`` name fields, ``run`` picks one of several runs."""
    return parse_runs(source, step=step, loss=loss, val_loss=val_loss)(run)


def parse_runs(source: str | Path, *, step: str | None = None, loss: str | None = None,
               val_loss: str | None = None) -> Take:
    """The log read once: ``take(run)`` is :func:`read` with ``run``, every run from this one pass."""
    path = Path(source)
    require_file(path, "text")
    encoding = check_text_file(path)
    runs, n_lines, skipped, markers = _scan(path, Mapper(loss, val_loss), step, encoding)
    # No line read: its records may be printed over two lines (a label, its value under it).
    joined = not runs[0].rows and step is None
    if joined and (two := _scan(path, Mapper(loss, val_loss), step, encoding, joined=True))[0][0].rows:
        runs, n_lines, skipped, markers = two
    few = None  # a log of fewer loss lines than a series needs, kept for when nothing else reads it
    if step is None and 0 < n_lines - skipped <= _FEW_STEPPED and (
            rows := _unstepped(path, Mapper(loss, val_loss), encoding, runs, n_lines - skipped, joined)) is not None:
        runs, n_lines, skipped, markers = rows
    elif not runs[0].rows and step is None:
        # No line names a step ("loss: 2.30" printed each epoch, faceswap's "loss_A: 0.19, loss_B:
        # 0.15"): the lines that carry a training loss, in order, are the run's points.
        # Three lines at least, or two printed as fields, as the sniff asks: a run summary's one
        # "train/loss 0.1" is no series.
        numbered = _scan(path, Mapper(loss, val_loss), step, encoding, numbered=True, joined=joined)
        if numbered[3].get("numbered", 0) >= NUMBERED_MIN or numbered[3].get("keyed", 0) >= KEYED_MIN:
            runs, n_lines, skipped, markers = numbered
        elif numbered[3].get("numbered", 0) and any(r.watch.all_events() for r in numbered[0]):
            # Fewer lines are a series when the log says its loss went non-finite (faceswap's one
            # "Loss A: 0.20026, Loss B: 0.22471" before its NaN guard ended the run): the event is the
            # finding. Read so only when no other reading below finds the log's loss.
            few = numbered
        elif loss is None and not numbered[3].get("numbered", 0):
            # No line names a loss: what the loop watches (an accuracy, a reward, a validation loss), 3 lines
            # at least; else values alone on their lines (``print(loss)``), 4 at least: 3 numbers can be anything.
            proxied = _scan(path, Mapper(loss, val_loss), step, encoding, numbered=True, proxy=True, joined=joined)
            if proxied[3].get("proxied", 0) >= 3:
                runs, n_lines, skipped, markers = proxied
            elif (bare := _scan(path, Mapper(loss, val_loss), step, encoding, numbered=True, bare=True, joined=joined))[3].get(
                    "bare", 0) >= BARE_MIN and not _accuracy_like(bare[0]):
                runs, n_lines, skipped, markers = bare
    take = functools.partial(take_run, path, runs, n_lines, skipped, markers)
    if step is None and loss is None and val_loss is None:
        # No reading above found a loss (nor a validation loss, a gradient norm): the names beside the
        # numbers, by one rule for any loop's print, before the log is refused.
        instead = anyline.instead(path, encoding, take, [col for r in runs for _, col in r.series],
                                  any(r.rows for r in runs))
        if instead is not None:
            return instead
        if not runs[0].rows and (table := embedded.read(path, encoding)) is not None:
            return table
    if not runs[0].rows and few is not None:
        take = functools.partial(take_run, path, *few)
        runs = few[0]
    if not runs[0].rows:
        hint = f"no line carries a {step!r} field" if step else (
            "no line carries a training step (step/iter/iteration N, Epoch e/N, [N/M], s:N) with a number")
        raise ImportFailedError(f"{path}: not a training log: {hint} ({n_lines} lines read)")
    return take


#: The most lines with a step that a log of many loss lines without one may hold and still be read
#: in rows: a loop that prints every update bare and a summary line (``iteration 8000, loss = 2.07``)
#: once or twice is a log of its updates, not of its one or two summaries.
_FEW_STEPPED = 2


def _unstepped(path: Path, mapper: Mapper, encoding: str, runs: list[RunAcc], stepped: int, joined: bool
               ) -> tuple[list[RunAcc], int, int, Counter] | None:
    """The log read in rows, when a training series the ``stepped`` lines read with a step hold is
    printed, read in order, on ``NUMBERED_MIN`` lines or more and 3x as many: the same quantity printed
    bare on the other lines, not the parts of a stepped line printed under it (``bce_loss: 0.0`` on a
    line of its own); else None."""
    trained = {col for r in runs for (ev, col) in r.series if not ev}
    numbered = _scan(path, mapper, None, encoding, numbered=True, joined=joined)
    most = max((len(vals) for r in numbered[0] for (ev, col), (_, vals) in r.series.items() if not ev and col in trained),
               default=0)
    return numbered if most >= max(NUMBERED_MIN, 3 * stepped) else None
