"""Step shapes of console lines beyond the plain markers, and what says a line is an evaluation pass.

- An epoch counted from 0 (torchvision's ``Epoch: [0]``, smp's ``Epoch: 0``): once an epoch 0 is
  seen the log counts epochs from 0, so epoch ``e`` holds the ``(e + 1)``-th block of batches.
- A *running* counter: an outer count and an inner one with no total (the PyTorch tutorial's
  ``[1,  2000] loss: 2.173``), or a progress bar's ``i/N`` under an epoch (tqdm). The inner count
  may restart every epoch (smp's ``46/46`` each epoch) or go on across them (kohya's ``41/410``,
  ``82/410``); the step is the inner count plus the inner counts of the epochs before, which is
  right both ways.
- A tqdm bar (``desc: 16%|███ | 41/410 [00:10<01:30, 1.2s/it, loss=0.11]``): its metrics are
  in the description (torchtune's ``1|25|Loss: 1.90``) and the postfix, so both are read.
- An evaluation pass is said by the line's *label*: the words before its first metric, past the
  step and epoch markers (``Test: [ 48/48]``, ``| epoch 001 | valid on 'valid' subset | loss``,
  ``Epoch 1 (valid): ... loss=1.74``). A validation name among the metrics (``val_loss``) says
  nothing about the line: the training line carries it too.
- A callback's message about a monitored metric (``'val_loss' reached 1.0 (best 1.0), saving``,
  ``'val_loss' was not in top 1``, ``val_loss improved from``) repeats a number logged elsewhere
  and names the step of the callback, not of a metric line: it is no step of its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from runlens.io.importers._linetypes import Context
from runlens.io.reader.names import is_epoch, is_step, is_val, role_of, tokens

# tqdm: "12%|███▏ | 41/410 [00:10<01:30, 1.22s/it, avr_loss=0.118]"; "?" totals are not counters.
# The bar itself may be absent (``ncols=0``, a notebook's plain-text copy: ``0% 49/90000 [02:46<81:43:57,
# 3.27s/it]``): then the ``[elapsed<remaining`` bracket says it is tqdm's counter, not a fraction in prose.
TQDM = re.compile(r"(\d{1,3})%\s*(?:\|[^|\n]*\||(?=\s*\d+\s*/\s*\d+\s*\[[\d:?]+<))\s*(\d+)\s*/\s*(\d+)\s*"
                  r"(?:\[([^\]\n]*)\]?)?")
# "[1,  2000] loss: 2.173": epoch and batch, no total.
PAIR = re.compile(r"^\s*\[\s*(\d+)\s*,\s*(\d+)\s*\]")
# MONAI's "1/4, train_loss: 0.65": one optimizer step's counter opening the line.
LEAD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*,")
# "Train: 0 [ 200/1251 ( 16%)]": an integer after a label, right before a bracketed counter, is the
# outer count (the epoch).
OUTER = re.compile(r"(?:^|:)\s*(\d+)\s*$")
CALLBACK = re.compile(r"['\"][\w/.@-]+['\"] (?:reached|was not in top)\b"
                      r"|\b[\w/.@-]+ (?:improved from|did not improve from)\b")
# smp's postfix "dice_loss - 0.4465": a name, " - ", a number, between commas.
_DASHED = re.compile(r"(?:^|(?<=,))(\s*[A-Za-z_][\w/@.-]*) - (?=[-+]?(?:\d|\.\d|nan|inf))")
_LABEL_FIELD = re.compile(r"(?<![\w.\-])([A-Za-z_][\w/()%#@.-]*)\s*[:=]?\s*[-+]?(?:\d|\.\d|nan|inf)", re.I)
# A description opening with a bare count and a bar ("2|26|Loss: 1.43"): the outer count of the bar.
_LEAD_COUNT = re.compile(r"\s*(\d+)\s*\|")
_SKIP = frozenset({"eta", "time", "of", "in", "at", "on", "is"})
# One word in brackets closing a line of values, which pass printed them (``(train)``, ``[validation]``).
_TAIL_TAG = re.compile(r"[(\[]([A-Za-z]+)[)\]]\s*$")
_AFTER_VALUE = re.compile(r"\d[^\s\d]*\s+$")  # the tag follows a value (its last digits, a unit), not a name
_NAME_VALUE = re.compile(r"[A-Za-z_][\w/.]*\s+[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_BAR_DESC = re.compile(r"^\s*([A-Za-z][\w ./-]{0,40}?)\s*:\s*\d{1,3}%\|")


def bar_evaluates(n: int, ctx: Context) -> bool:
    """Whether a bar of ``n`` with no epoch is shorter than one that ran to its end before: a pass over
    other data, an evaluation at the last training step (its callers ask for one), not :func:`bar_pass`'s.
    A loop of ``for x in tqdm(train)`` then ``for x in tqdm(valid)``, neither described: D2-Net's
    ``11500/11500 [..., loss=1.0000]`` then ``1875/1875``."""
    return ctx.bar_done is not None and n < ctx.bar_done


def bar_pass(i: int, n: int, ctx: Context) -> int:
    """The step of batch ``i`` of ``n`` on a progress bar with no epoch: the count as logged, plus
    ``n`` for every bar of the same length that ran to its end before (a loop of ``fit(epochs=1)``
    prints ``32/32 [===] - loss: 11.87`` once per pass: each is a pass of its own, not one step).
    A longer bar after a shorter one that ran to its end is the next pass, the shorter a pass before
    training (an evaluation of the initial model) read as it came; a shorter one after a longer one
    is an evaluation, which callers find first (:func:`bar_evaluates`)."""
    if ctx.bar_last == ctx.bar_total and ctx.bar_total is not None and i <= n and (
            n == ctx.bar_total or n > (ctx.bar_done or 0)):
        ctx.bar_offset += ctx.bar_total
    ctx.bar_total, ctx.bar_last = n, i
    if i == n:
        ctx.bar_done = max(ctx.bar_done or 0, n)
    return ctx.bar_offset + i


def counted(e: int, i: int, n: int, ctx: Context) -> int:
    """The 0-based optimizer step of batch ``i`` of ``n`` in epoch ``e`` (from 1, or from 0 once an
    epoch 0 is seen: epoch 0 then is the first block, not one clipped onto epoch 1's)."""
    ctx.zero_epoch = ctx.zero_epoch or e == 0
    ctx.per_epoch = n
    return max((e + ctx.zero_epoch - 1) * n + i - 1, 0)


def running(e: int | None, i: int, ctx: Context) -> int:
    """The step of a running counter ``i`` inside outer count ``e``: ``i`` plus the inner counts of
    the outer counts before, when the inner one restarted; an outer count going back starts over."""
    if e is None:
        ctx.outer = None
        return i
    if ctx.outer is not None:
        if e < ctx.outer:
            ctx.offset = 0
        elif e > ctx.outer and i <= ctx.inner:
            # A count from 0 ("[Batch 0]") opens the new outer count one past the last inner count.
            ctx.offset += ctx.inner + (i == 0)
    ctx.outer, ctx.inner = e, i
    return ctx.offset + i


def enter_epoch(ctx: Context, e: int) -> None:
    """An epoch header: the epoch of the lines below; the first epoch (0 or 1) may begin a new run."""
    ctx.zero_epoch = ctx.zero_epoch or e == 0
    ctx.epoch, ctx.per_epoch, ctx.headed = e, None, True
    if e == (0 if ctx.zero_epoch else 1):
        ctx.restart = True
        ctx.outer, ctx.inner, ctx.offset = None, 0, 0


def other_total(n: int, epoch: int | None, ctx: Context) -> bool:
    """A counter under an epoch header whose total is not the epoch's own (Keras prints
    ``model.evaluate()`` as ``313/313 [===] - loss: 0.09`` after the last ``1875/1875`` of the fit):
    a pass over other data, an evaluation at the last training step."""
    return (epoch is None and ctx.epoch is not None and ctx.per_epoch is not None and n != ctx.per_epoch
            and ctx.last_step is not None)


def label_is_eval(text: str) -> bool:
    """Whether the words before the line's first metric (past step and epoch markers) say validation,
    or a tqdm bar's description does (``valid: 100%|####| 101/101 [...]``: its percentage is no metric)."""
    bar = _BAR_DESC.match(text)
    if bar is not None:
        return is_val(tokens(bar.group(1)))
    tag = _TAIL_TAG.search(text) if text.rstrip().endswith((")", "]")) else None
    if tag is not None and _AFTER_VALUE.search(text[max(0, tag.start() - 64):tag.start()]):
        # G-TAD's ``Loss 5.48 = 4.18 + 1.30 (validation)``: the pass named after the values.
        return is_val(tokens(tag.group(1).lower()))
    for m in _LABEL_FIELD.finditer(text[:400]):
        toks = tokens(m.group(1))
        if not toks or m.group(1).lower() in _SKIP or is_step(toks) or is_epoch(toks):
            continue
        return is_val(tokens(text[:m.start(1)].lower()))
    return False


def bar_step(text: str, m: re.Match, ctx: Context, ev: bool, epoch: int | None,
             read: Callable[[str], list[tuple[str, float]]]) -> tuple[int, int | None, list, bool] | None:
    """``(step, epoch, fields, eval)`` of a tqdm line with metrics, None without: the step is its running
    counter, an evaluation bar's the last training step (it counts evaluation batches)."""
    desc = text[:m.start()].rstrip().rstrip(":")
    post = _DASHED.sub(r"\1=", m.group(4) or "")
    # A description is a title: a number after a bare word there is an index ("Epoch 0",
    # "Validation DataLoader 0"); a metric in it is joined by ":" or "=" ("1|25|Loss: 1.90").
    # A setting in parentheses is part of the title too ("Running tokenizer (num_proc=16)").
    # A loss with a fraction is a metric however it is joined (minGPT's "epoch 8 iter 0: train loss
    # 0.07305.", or nan): no title numbers itself with a fraction or a NaN.
    fields = [(k, v) for k, v in read(desc) if "(" not in k and (
        as_field(k, desc) or (role_of(k)[1] == "loss" and (not math.isfinite(v) or v != int(v))))]
    fields += read(post)
    if m.group(4) is not None and text[m.end() - 1:m.end()] == "]":
        # A print right after the bar, with no newline between (anoGAN's ``16.42s/it]dloss: 0.0001``):
        # the batch's metrics, the bar's redraw left on the same line. Only fields joined by ":" or "=":
        # a message glued there is prose (apex's "loss scaler 0 reducing loss scale to 7.9e-31").
        # A loss printed by itself after the bar, ``print("loss", loss)``, is joined by a space alone
        # (Cylinder3D's ``1.24it/s]loss tensor(0.6868, device='cuda:0', ...)``, the tensor unwrapped).
        after = text[m.end():]
        glued = read(after)
        alone = len(glued) == 1 and _NAME_VALUE.fullmatch(after.strip()) and role_of(glued[0][0])[1] == "loss"
        fields += [(k, v) for k, v in glued if alone or as_field(k, after)]
    if not fields:
        return None
    e = epoch if epoch is not None else ctx.epoch
    if e is None and (lead := _LEAD_COUNT.match(desc)):
        e = int(lead.group(1))  # torchtune's "2|26|Loss: 1.43": the bar under it restarts every epoch
    if e is None:
        # A postfix that names the epoch (PU-Net's ``800/800 [..., Ep=20, Loss=13.41]``): the bar restarts under it.
        e = next((int(v) for k, v in fields if is_epoch(tokens(k)) and v == int(v) and v >= 0), None)
    n = int(m.group(3))
    if ctx.last_step is not None and (ev or (e is None and bar_evaluates(n, ctx))):
        return ctx.last_step, e, fields, True
    if e is None:
        # No epoch: a bar that ran to its end and is printed again at the same length is a pass of its
        # own (AllenNLP's ``loss: 1.0986 ||: 100%|###| 10/10`` once per epoch), counted on, not one step.
        ctx.outer = None  # as a count with no outer count leaves it (:func:`running`)
        return bar_pass(int(m.group(2)), n, ctx), e, fields, ev
    return running(e, int(m.group(2)), ctx), e, fields, ev


#: Units that make a value a duration, whatever its name says.
TIME_UNITS = frozenset({"s", "sec", "secs", "second", "seconds", "ms", "msec", "us", "µs", "min", "mins", "h",
                        "hr", "hrs", "s/it", "sec/it", "ms/it", "s/step", "ms/step", "s/iter", "sec/iter"})
NEXT_WORD = re.compile(r" ([A-Za-zµ]+(?:/[A-Za-z]+)?)\b")


def time_unit(unit: str | None, text: str, end: int) -> tuple[str | None, int]:
    """The time unit a value carries, glued (``4.2s``) or as the next word (``0.00039 sec``), or None;
    and where the unit ends."""
    if unit:
        return (unit if unit.lower() in TIME_UNITS else None), end
    m = NEXT_WORD.match(text, end)
    if m is None:
        return None, end
    word = m.group(1).lower()
    # A rate's unit ("463.03 samples/sec", "12 img/s") is the value's too: the next name does not start with it.
    return (m.group(1), m.end()) if word in TIME_UNITS or word.partition("/")[2] in PER_TIME else (None, end)


#: The denominators of a throughput's unit (``samples/sec``, ``tokens/s``, ``img/step``).
PER_TIME = frozenset({"s", "sec", "second", "it", "iter", "step", "batch"})
_RATE_LEAD = re.compile(rf"^[A-Za-z]+/(?:{'|'.join(sorted(PER_TIME))}) (?=\S)", re.I)


def rate_left_off(name: str) -> str:
    """``name`` without a throughput's unit before it, left over from a value not read as a field
    ("872-Speed 463.03 samples/sec Loss 44.1" names "Loss"): no name starts with one."""
    return _RATE_LEAD.sub("", name)


def batch_count(m: re.Match, espan: tuple[int, int] | None) -> bool:
    """Whether ``batch N`` counts batches: after its epoch, or of its total (GluonNLP's ``Batch:
    4512/7387``); ``batch 32`` alone is as likely the batch's size."""
    return (espan is not None and espan[1] <= m.start(1)) or m.group(2) is not None


def as_field(name: str, text: str) -> bool:
    """Whether ``name`` is printed as a field on ``text``: a colon or an equals sign after it."""
    return re.search(re.escape(name) + r"\s*[:=]", text) is not None
