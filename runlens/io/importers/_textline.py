"""One console line: cleaned of decoration, its training step found, its numeric fields read.

Cleaning drops what never carries a metric: ANSI colour codes, e-mail and
Markdown quoting (``> ``), a leading timestamp (ISO, ``MM/DD HH:MM:SS``,
``[2023-...]``), glog prefixes (``I0815 18:59:11.32 52129 solver.cpp:232]``)
and logger prefixes (``INFO:root:``, ``- mmengine - INFO -``,
``INFO  DistriOptimizer$:295 -``).

Fields are read *after* the step marker (``iter 2920:``, ``Epoch(train) [1][200/735]``), so no prefix
becomes a metric, unless only the text before it names a loss (the whole line's are then read, see
:func:`._roundline.keyed_rest`); :mod:`._fields` says what a field is.
"""

from __future__ import annotations

import math
import re

from runlens.io.importers._fields import read_fields
from runlens.io.importers._linetypes import Context, Line
from runlens.io.importers._mapping import NUM as _NUM
from runlens.io.importers._mapping import braced, mapping_fields, parse_mapping, to_float
from runlens.io.importers._roundline import GLUED_EPOCH, LEADING, keyed_rest, set_named
from runlens.io.importers._shapedlines import NAMED_STEP, shaped_line
from runlens.io.importers._textsteps import (
    CALLBACK,
    LEAD,
    OUTER,
    PAIR,
    TQDM,
    bar_evaluates,
    bar_pass,
    bar_step,
    batch_count,
    counted,
    enter_epoch,
    label_is_eval,
    other_total,
    running,
)
from runlens.io.reader.names import (
    ERROR_WORDS,
    LOSS,
    STEP_WORDS,
    counter_core,
    is_step,
    is_val,
    role_of,
    tokens,
)

# Step markers, most specific first. Each gives (step, total-or-None); eval says the line is a validation pass.
_MM_EPOCH = re.compile(r"\bEpoch\((train|val|test)\)\s*\[\s*(\d+)\s*\]\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]", re.I)
_MM_ITER = re.compile(r"\bIter\((train|val|test)\)\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]", re.I)
_LLMC = re.compile(r"^s:(\d+)(?=\s)")
# A counter's plural names it only opening the line (DeepSpeed's "steps: 78 loss: 0.1150", FANN's "Epochs
# 1000. Current error: 34.07."): elsewhere "warmup steps 500" is a setting. A count ends before a
# sentence's full stop, not before a decimal's.
# "batch" counts steps only after the epoch on its line (GluonCV's "[Epoch 0][Batch 99]", MXNet's
# "Epoch[3] Batch [200]"): elsewhere "batch 32" is as often a size as a count.
_KEYED = [(name, re.compile(rf"(?:^[ \t]*{pat}s|\b{pat})(?:_(?=\d)|[ \t]*[:=#]?[ \t]*\[?[ \t]*)(\d+)(?:[ \t]*/[ \t]*(\d+))?"
                            r"(?!\d|\.\d|[ \t]*batches)", re.I))
          for name, pat in (("global_step", r"global[_ ]step"), ("step", r"step"),
                            ("iteration", r"iteration"), ("iter", r"iter"), ("batch", r"batch"))]
# ``It: 10, Loss: 2.9e+02`` (the PINNs' print): ``it`` counts only first on its line, after an arrow at most.
_KEYED.append(("it", re.compile(r"^[ \t\-*>#=]*it[ \t]*[:=][ \t]*(\d+)(?:[ \t]*/[ \t]*(\d+))?(?!\d|\.\d)", re.I)))
# An RL loop's episode opening its line ("Episode 10  Average reward: 42.1"); inside a line it is a field.
_KEYED.append(("episode", re.compile(r"^[ \t\-*>#]*episode[ \t]*[:=#]?[ \t]*(\d+)(?!\d|\.\d)", re.I)))
_WORD = re.compile(r"\s*[A-Za-z_]+")
_THOUSANDS = re.compile(r"(?:,\d{3})+(?![\d.])")
_BATCHES = re.compile(r"\b(\d+)\s*/\s*(\d+)\s*batches\b", re.I)
_BAR = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*(?=\[|\u2501|\|)")
# timm writes the share done inside the counter's brackets: "[ 200/1251 ( 16%)]".
_BRACKET = re.compile(r"\[\s*(\d+)\s*/\s*(\d+)\s*(?:\(\s*\d+(?:\.\d+)?%\s*\)\s*)?\]")
# VDSR's batch counter in parentheses right after the epoch's own: "Epoch[1](100/724)".
_PAREN_COUNT = re.compile(r"\s*\]?\s*\(\s*(\d+)\s*/\s*(\d+)\s*\)")
_EPOCH = re.compile(r"(?:^\s*epochs|\bepoch)\s*[:=#]?\s*\[?\s*(\d+)(?:\s*/\s*(\d+))?", re.I)
# "Epoch 3/10" (Keras), or "Epoch: 0" alone on its line (smp): the epoch of the lines below; framed
# as a banner too ("[ Epoch 0 ]", "===== Epoch 3 =====") or announced ("Starting Epoch 7:", SINGA's).
_EPOCH_HEADER = re.compile(r"^\s*(?:[\[(=*#>-]+\s*)?(?:(?:Starting|Start|Beginning|Begin|Begins)\s+|"
                           r"(?:Summary|Summaries|Results?|Statistics|Stats|Metrics|Report|Training|Running)\s+(?:(?:of|for|at|in)\s+)?(?:the\s+)?)?Epoch\s*(?:\s|:|#|=)\s*(\d+)(?:\s*/\s*(\d+))?\s*:?\s*"
                           r"(?:[\])=*#-]+\s*)?$", re.I)
_END_OF_EPOCH = re.compile(r"\bend of epoch\s+(\d+)", re.I)
# VoxelMorph's "After 3 epochs, the Average training loss is ...": the count of epochs done is the epoch.
_AFTER_EPOCHS = re.compile(r"\bafter\s+(\d+)\s+epochs?\b", re.I)
_NET_OUTPUT = re.compile(rf"\b(Test|Train) net output #\d+:\s*([\w/]+)\s*=\s*({_NUM})", re.I)
_EVAL_LINE = re.compile(r"\b(?:validation|valid|eval|evaluation)\s+loss\s+at\b"
                        r"|^\s*(?:validation|validating|evaluation|evaluating)\b"
                        r"|\bEpoch\((?:val|test)\)|\bIter\((?:val|test)\)|\bend of epoch\b", re.I)


def _step_names(keys: list[str]) -> list[str]:
    """The keys that name a step counter by the reader's words, the likeliest first: by the counter's
    word (``step`` before ``iteration``), the longer name first (``global_step`` before ``step``)."""
    order = {w: i for i, w in enumerate(STEP_WORDS)}
    found = [k for k in keys if is_step(tokens(k))]
    return sorted(found, key=lambda k: (order[counter_core(tokens(k))[0]], -len(tokens(k))))


def _dict_line(text: str, step_names: tuple[str, ...] | None = None) -> Line | None:
    """A dict or JSON object on the line holding a step key (``step_names``, else any the reader's
    words call a step counter); a validation pass when a key says so and none is the training loss."""
    body = braced(text)
    if body is None:
        return None
    d = parse_mapping(body)
    if d is None:
        return None
    fields = mapping_fields(d)
    lower = {k.lower(): (k, v) for k, v in fields}
    names = step_names if step_names is not None else [k.lower() for k in _step_names([k for k, _ in fields])]
    for name in names:
        if name in lower and math.isfinite(lower[name][1]):
            key, step = lower[name]
            epoch = lower.get("epoch", (None, None))[1]
            rest = [(k, v) for k, v in fields if k != key]
            ev = any(is_val(tokens(k)) for k, _ in rest) and not any(role_of(k) == (False, "loss") for k, _ in rest)
            return Line(int(step), "", ev, None if epoch is None or not math.isfinite(epoch) else int(epoch),
                        key, fields=rest)
    return None


def find_step(text: str, ctx: Context, step_key: str | None = None) -> Line | None:
    """The step this line reports, or None for a line that carries none."""
    if step_key is not None:
        return _given_step(text, ctx, step_key)
    if "{" in text and (line := _dict_line(text)):
        return line
    if m := _NET_OUTPUT.search(text):
        if ctx.last_step is None:
            return None
        test = m.group(1).lower() == "test"
        return Line(ctx.last_step, "", test, None, "net output", fields=[(m.group(2), to_float(m.group(3)))])
    if m := _EPOCH_HEADER.match(text):
        enter_epoch(ctx, int(m.group(1)))
        return None
    if CALLBACK.search(text):
        return None
    ev = bool(_EVAL_LINE.search(text)) or label_is_eval(text)
    epoch, espan = _epoch_on_line(text)
    if shaped := shaped_line(text, read_fields):
        return Line(shaped[0], "", ev and shaped[1] in NAMED_STEP, epoch, shaped[1], fields=shaped[2])
    if (m := TQDM.search(text)) and "{" not in text[m.end():]:
        if (bar := bar_step(text, m, ctx, ev, epoch, read_fields)) is None:
            return None
        return Line(bar[0], "", bar[3], bar[1], "progress bar", fields=bar[2])
    if m := _MM_EPOCH.search(text):
        e, i, n = int(m.group(2)), int(m.group(3)), int(m.group(4))
        sp: tuple[tuple[int, int], ...] = (m.span(2), m.span(3), m.span(4))
        if m.group(1).lower() != "train":
            return Line(ctx.last_step if ctx.last_step is not None else (e - 1) * n + i - 1,
                        text[m.end():], True, e, "Epoch(val)", formula="last_mm", spans=sp, rest_at=m.end())
        ctx.per_epoch = n
        return Line((e - 1) * n + i - 1, text[m.end():], False, e, "Epoch(train)", formula="mm", spans=sp,
                    rest_at=m.end(), count=(i, n))
    if m := _MM_ITER.search(text):
        sp = (m.span(2),)
        if m.group(1).lower() != "train":
            step = ctx.last_step if ctx.last_step is not None else int(m.group(2))
            return Line(step, text[m.end():], True, epoch, "Iter(val)", formula="last_int", spans=sp,
                        epoch_span=espan, rest_at=m.end())
        return Line(int(m.group(2)), text[m.end():], False, epoch, "Iter(train)", formula="int", spans=sp,
                    epoch_span=espan, rest_at=m.end())
    if m := _LLMC.match(text):
        return Line(int(m.group(1)), text[m.end():], ev, epoch, "s:", formula="int", spans=(m.span(1),),
                    epoch_span=espan, rest_at=m.end())
    for name, pat in _KEYED:
        if (m := pat.search(text)) and (name != "batch" or batch_count(m, espan)) and (
                not _plural(text, m.start()) or (epoch is None and _reports_loss(text[m.end():]))):
            rest, at, summary = keyed_rest(text, m, read_fields)  # the step may follow its fields
            if len(m.group(1)) <= 3 and (g := _THOUSANDS.match(text, m.end(1))):  # BasicSR's ``iter:  70,400``: one count, not replayable
                return Line(int(m.group(1) + g.group().replace(",", "")), rest, ev or summary, epoch, name)
            if name != "global_step" and epoch is not None and espan is not None and espan[1] <= m.start(1):
                # "Epoch [2/5], Step [100/600]": a counter after the epoch may restart every epoch (the
                # PyTorch tutorial's; MindSpore's "epoch: 2 step: 1875, loss is 0.12" prints the epoch's
                # last step each epoch) or run on (a total of the run's steps); a running count is right
                # both ways, where the counter alone splits the log into runs or folds epochs onto one step.
                return Line(running(epoch, int(m.group(1)), ctx), rest, ev or summary, epoch, name,
                            formula="running", spans=(espan, m.span(1)), epoch_span=espan, rest_at=at)
            return Line(int(m.group(1)), rest, ev or summary, epoch, name, formula="int", spans=(m.span(1),),
                        epoch_span=espan, rest_at=at)
    return _counter_step(text, ctx, ev, epoch, espan) or _leading_counter(text, ev) or _glued_epoch(text, ev)


def _counter_step(text: str, ctx: Context, ev: bool, epoch: int | None,
                  espan: tuple[int, int] | None) -> Line | None:
    """Steps from per-batch counters inside an epoch, from ``end of epoch N``, or the epoch itself.

    A counter alone is the step as logged (``[10/1200]`` is step 10); inside an
    epoch it says how many batches are done (``200/2983``: the 200th), so the
    0-based optimizer step is ``(epoch - 1) * per_epoch + i - 1``. An evaluation
    line's counter counts evaluation batches: its step is the last training step."""
    if m := PAIR.match(text):
        return Line(running(int(m.group(1)), int(m.group(2)), ctx), text[m.end():], ev, int(m.group(1)), "[e, i]",
                    formula="running", spans=(m.span(1), m.span(2)), epoch_span=m.span(1), rest_at=m.end())
    bar = None if _BATCHES.search(text) else _BAR.match(text)
    m = _BATCHES.search(text) or bar or LEAD.match(text) or _BRACKET.search(text)
    if m is not None and m.re is _BRACKET and espan is not None and m.start() <= espan[0] < m.end():
        # "Epoch [19/20], Loss: 2.30": the bracket is the epoch's own (19 of 20), not a batch counter.
        m = _BRACKET.search(text, m.end())
    if m is None and espan is not None:  # VDSR's "Epoch[1](100/724)": the batch counter in parentheses
        m = _PAREN_COUNT.match(text, espan[1])
    if m is not None and epoch is None and m.re is _BRACKET and (o := OUTER.search(text, 0, m.start())):
        epoch, espan = int(o.group(1)), o.span(1)
    elif m is not None and epoch is None and m.re is _BRACKET and (inner := _BRACKET.match(text, m.end())):
        # "[0/25][5/782] Loss_D": side by side (DCGAN's print), the epoch of its total and the batch in it.
        epoch, espan, m = int(m.group(1)), m.span(1), inner
    e = epoch if epoch is not None else ctx.epoch
    if m:
        i, n = int(m.group(1)), int(m.group(2))
        sp = (m.span(1), m.span(2))
        formula = "bar" if bar is not None else "counter"
        if ctx.last_step is not None and (ev or (bar is not None and (
                other_total(n, epoch, ctx) or (e is None and bar_evaluates(n, ctx))))):
            # Only a label's evaluation is the shape's: the other total's is this line's context.
            return Line(ctx.last_step, text[m.end():], True, e, "eval counter", formula="last_" + formula if ev else "",
                        spans=sp, epoch_span=espan, rest_at=m.end(), partial=bar is not None and i < n)
        if e is None:
            # The counter as logged: the user finds "[10/1200]" in the file as step 10, not 9.
            step = bar_pass(i, n, ctx) if bar is not None else i
            return Line(step, text[m.end():], ev, None, "[N/M]", formula=formula, spans=sp,
                        rest_at=m.end(), partial=bar is not None and i < n)
        return Line(counted(e, i, n, ctx), text[m.end():], ev, e, "epoch+counter", formula=formula,
                    spans=sp, epoch_span=espan, rest_at=m.end(), partial=bar is not None and i < n,
                    count=(i, n))
    if m := _END_OF_EPOCH.search(text):
        e = int(m.group(1))
        step = e * ctx.per_epoch - 1 if ctx.per_epoch else e
        return Line(step, text[m.end():], True, e, "end of epoch", formula="end_epoch", spans=(m.span(1),),
                    rest_at=m.end())
    if epoch is None and (m := _AFTER_EPOCHS.search(text)):
        e = int(m.group(1))
        return Line(e, text[m.end():], ev, e, "after epochs", formula="int", spans=(m.span(1),),
                    epoch_span=m.span(1), rest_at=m.end())
    if epoch is not None and (m := _EPOCH.search(text)):
        return Line(epoch, text[m.end():], ev, epoch, "epoch", formula="int", spans=(m.span(1),),
                    epoch_span=espan, rest_at=m.end())
    return None


def _plural(text: str, at: int) -> bool:
    """Whether the counter's word at ``at`` is a plural (``iters``, ``steps``). Beside an epoch a plural
    counts inside it, restarting each epoch (Informer's ``iters: 100, epoch: 916 | loss: ...``): there the
    epoch stays the line's step (:func:`_reports_loss` says where else a plural is no step)."""
    word = _WORD.match(text, at)
    return word is not None and word.group().endswith(("s", "S"))


def _epoch_on_line(text: str) -> tuple[int | None, tuple[int, int] | None]:
    m = _EPOCH.search(text)
    if m is None or (_plural(text, m.start()) and not _reports_loss(text[m.end():])):
        return None, None
    return int(m.group(1)), m.span(1)


#: The words of a loss, or of an error a trainer minimizes, that a plural counter's line reports.
_LOSS_OR_ERROR = LOSS | ERROR_WORDS


def _reports_loss(rest: str) -> bool:
    """Whether ``rest`` holds a field named a loss or an error. A plural counter opening a line is its
    step only on such a line: a wrapped line's tail opens with one too (Megatron's "number of nan" then
    "iterations:  0 | samples per second: 19.47 |" on the next line)."""
    return any(not _LOSS_OR_ERROR.isdisjoint(tokens(k)) for k, _ in read_fields(rest))


def _given_step(text: str, ctx: Context, key: str) -> Line | None:
    """The step read from the field the user named (``--step KEY``)."""
    if "{" in text and (line := _dict_line(text, (key.lower(),))):
        return line
    pat = re.compile(rf"(?<![\w.]){re.escape(key)}[ \t]*[:=#]?[ \t]*\[?[ \t]*(\d+)(?![\d.])", re.I)
    m = pat.search(text)
    if not m:
        return None
    epoch, espan = _epoch_on_line(text)
    return Line(int(m.group(1)), text[m.end():], bool(_EVAL_LINE.search(text)), epoch, key, formula="int",
                spans=(m.span(1),), epoch_span=espan, rest_at=m.end())


def _leading_counter(text: str, ev: bool) -> Line | None:
    """A line opened by a bare round counter (``[10]\t...``, ``10:\t...``): the round is the step."""
    m = LEADING.match(text)
    if m is None:
        return None
    g = 1 if m.group(1) is not None else 2
    rest = text[m.end():]
    if (fields := set_named(read_fields(rest))) is not None:
        return Line(int(m.group(g)), rest, ev, None, "round", fields=fields)
    return Line(int(m.group(g)), rest, ev, None, "round", formula="int", spans=(m.span(g),), rest_at=m.end())


def _glued_epoch(text: str, ev: bool) -> Line | None:
    """``3epoch``: the epoch is the step, as ``epoch 3`` alone is."""
    m = GLUED_EPOCH.search(text)
    if m is None:
        return None
    e = int(m.group(1))
    return Line(e, text[m.end():], ev, e, "epoch", formula="int", spans=(m.span(1),), epoch_span=m.span(1),
                rest_at=m.end())
