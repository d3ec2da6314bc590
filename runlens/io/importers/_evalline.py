"""Lines that name no step: a validation line's fields belong to the last training step seen, a line
of losses right under an epoch header is that epoch's, and in a log where no line names one, the
lines with a training loss are numbered as the steps."""

from __future__ import annotations

import re
from collections import Counter

from runlens.io.importers._clean import FRACTION, clean, squeeze
from runlens.io.importers._logsignals import is_part
from runlens.io.importers._names import Mapper
from runlens.io.importers._textline import Line, read_fields
from runlens.io.importers._textsteps import as_field
from runlens.io.reader.names import LOSS, PERPLEXITY, is_val, role_of, tokens
from runlens.io.reader.objective import names_objective

_EVAL_WORD = re.compile(r"\b(?:evaluation|validation|validating|evaluating|testing|valid|eval|val|test|dev)\b", re.I)
_LAST_WORD = LOSS | PERPLEXITY | {"acc", "accuracy", "bleu"}
_VAL_NAMED = re.compile(r"(?:val|valid|eval|test)_\w*loss", re.I)


def eval_at_last_step(raw: str, step: int | None) -> tuple[Line | None, list[tuple[str, float]]]:
    """A validation line that names no step ("Evaluation result (greedy) loss: 3.72, ppl: 41.47"):
    its fields at the last training step seen, as a validation pass. Before any training step
    (llm.c's ``val loss 11.0`` of the initial model) it is step 0, and only for a loss or a
    perplexity: a log's header names evaluation settings with numbers too ("eval batches: 20")."""
    text = clean(squeeze(raw.strip()))
    m = _EVAL_WORD.search(text[:400])
    if m is None:
        # "giou_val_loss: nan, ..., total_val_loss: nan": no word says it, every name does.
        if step is None or not _VAL_NAMED.search(text[:400]):
            return None, []
        fields = read_fields(text)
        if fields and all(is_val(tokens(k)) for k, _ in fields):
            return Line(step, text, True, None, "eval after step"), fields
        return None, []
    # "result (greedy) loss: 3.72": the words before a metric's own name are prose, not part of it.
    fields = _trimmed(read_fields(text[m.end():]))
    if not fields or (step is None and not any(set(tokens(k)) & (LOSS | PERPLEXITY) for k, _ in fields)):
        return None, []
    return Line(0 if step is None else step, text[m.end():], True, None, "eval after step"), fields


def _trimmed(fields: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Each name cut to its metric's own word, unless an earlier name on the line was cut to that word:
    ``valid Loss: 0.0222 Dice Loss: 0.1044`` keeps ``Dice Loss`` apart from the loss it follows."""
    out, taken = [], set()
    for k, v in fields:
        toks = tokens(k)
        word = toks[-1] if toks and toks[-1] in _LAST_WORD and toks[-1] not in taken else k
        taken.add(word)
        out.append((word, v))
    return out


_DIGIT = re.compile(r"\d")
_NUMBER = re.compile(r"\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


# "Updating learning rate to 7.2e-280" (Informer), "lr = 0.001", "Learning rate: 1e-4": the rate's
# name, a joining word at most, and the line's one number at its end.
_LR_LINE = re.compile(r"\b(?:learning[\s_-]*rate|lr)\s*(?:[:=]|->|is|to|now|set to|updated to|changed to)?\s*"
                      r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*\.?\s*$", re.I)


def lr_line(raw: str) -> float | None:
    """The learning rate a line that names no step states and nothing else (``Updating learning rate to
    7.2e-280``, printed once an epoch by the time-series forecasters): the rate from the last training
    step on. None for any other line ("warmup steps of the learning rate: 500" names no rate)."""
    low = raw.lower()
    if "lr" not in low and "rate" not in low:
        return None  # most lines with no step: no cleaning for them
    text = clean(squeeze(raw.strip()))
    m = _LR_LINE.search(text)
    if m is None or len(_NUMBER.findall(text)) != 1:
        return None
    return float(m.group(1))


def under_header(raw: str, epoch: int) -> tuple[Line | None, list[tuple[str, float]]]:
    """The line right under an ``Epoch 4/200`` header that names no step but a loss (Keras' ``verbose=2``
    prints `` - 2s - loss: 55.80 - val_loss: 26.45`` there): that epoch's summary, at the epoch."""
    fields = read_fields(clean(squeeze(_LABEL.sub(lambda m: f"{m.group(1) or m.group(2)} ", raw.strip()))))
    # A perplexity alone is exp(loss) (the importer takes its log when no loss is logged beside it).
    if not any(role_of(k)[1] in ("loss", "val_loss") or not PERPLEXITY.isdisjoint(tokens(k)) for k, _ in fields):
        return None, []
    return Line(epoch, "", False, epoch, "epoch"), fields


# A bullet and a side in parentheses or brackets opening a line: ``  - (Training)   ppl: 69.9, accuracy: 48.1 %``,
# DRTP's ``[ Testing set] Loss: 1.64``.
_LABEL = re.compile(r"^[-*•>]*\s*(?:\(\s*([A-Za-z][\w ]{0,30}?)\s*\)|\[\s*([A-Za-z][\w ]{0,30}?)\s*\])\s*")


# A line that opens a held-out block and ends there: "Epoch [1/5] - Test Metrics:", "Validation results:".
_SECTION = re.compile(r"\b(?:evaluation|validation|valid|eval|val|test|dev)(?:\s+[A-Za-z]+){0,2}\s*:\s*$", re.I)


def opens_section(raw: str) -> bool:
    """Whether ``raw`` heads a block of held-out results: the lines under it, up to a blank line or the
    next training step, name their metrics without a side (``loss: 4.8458`` under ``Test Metrics:``)."""
    line = raw.rstrip()
    return line.endswith(":") and _SECTION.search(line) is not None


def in_section(raw: str, step: int) -> tuple[Line | None, list[tuple[str, float]]]:
    """A line in a held-out block (:func:`opens_section`): its fields, each named for the held-out side,
    at the last training step seen."""
    fields = read_fields(clean(squeeze(raw.strip())))
    if not fields:
        return None, []
    return Line(step, "", True, None, "eval section"), [(k if is_val(tokens(k)) else f"val {k}", v) for k, v in fields]


# A value alone on its line, with a fraction or an exponent (a whole number alone is a counter, a
# count or a year), or a NaN/Inf: what ``print(loss)`` and ``print(loss.item())`` leave in a loop.
_BARE = re.compile(rf"(?:{FRACTION}|[-+]?(?:nan|inf|infinity))", re.I)
#: The fewest such values read as a loss: three numbers alone on their lines can be anything.
BARE_MIN = 4
# A loop's own counter before the value, by a colon or a tab (``print(f"{i}:\t{loss}")``, ``Step: 100 :
# 0.626``): the line still holds one value. A space alone does not set them apart: ``2020 0.5`` may be a
# date and a rate.
_COUNTER = re.compile(r"^(?:(?:step|iter|iteration|epoch|batch)\s*[:=#]?\s*)?\d{1,9}\s*(?::|\t)\s*", re.I)
# The settings of a sweep printed before that counter (``LR: 1000, Iter 10: 20.36``, a loop run once per
# learning rate): what the run was given, not what it measured; the value after the counter is still alone.
_SETTINGS = re.compile(r"^(?:(?:lr|learning[ _]rate|batch[ _]size|bs|wd|weight[ _]decay|momentum)\s*[:=]\s*"
                       r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?\s*[,;|]?\s*){1,4}(?=\D)", re.I)
#: Lines naming a training loss, with no step on any line, that make a series: three, or two that
#: print it as a field (``Train loss: 0.4594``, ``loss=0.52``): two epochs' averages are a log too
#: short for a shape but not nothing, where two lines of prose that name a loss beside a number are
#: notes (a run summary prints its loss once).
NUMBERED_MIN = 3
KEYED_MIN = 2


def bare_value(raw: str, cleaned: str | None = None) -> float | None:
    """The value of a line that holds one value and nothing else once cleaned (``0.6931``,
    ``tensor(0.6931, grad_fn=<NllLossBackward0>)``, ``nan``), else None; ``cleaned``: the line
    already cleaned by the caller."""
    if not raw or len(raw) >= 200:
        return None
    text = clean(raw.strip()) if cleaned is None else cleaned.strip()
    if not text:
        return None
    m = _BARE.fullmatch(text) or _BARE.fullmatch(_COUNTER.sub("", _SETTINGS.sub("", text, count=1), count=1))
    return float(m.group(0)) if m else None


def number_lines(lines: list[str], mapper: Mapper, markers: Counter, bare: bool = False,
                 proxy: bool = False) -> list[str]:
    """``lines`` with ``step N:`` put before each (cleaned) line that carries a training loss or a loss
    part (faceswap's ``loss_A: 0.19, loss_B: 0.15``, summed as the table reader sums parts), ``N``
    counting those lines through the log (``markers["numbered"]``); the others as they are, so an
    evaluation line still goes to the last step before it. ``bare``: in a log where no line names a
    loss, each value alone on its line (:func:`bare_value`) is that loss (``markers["bare"]``).
    ``proxy``: in a log where no line carries a training loss, the lines that carry a validation loss,
    a perplexity, an accuracy, an error rate or a reward are numbered instead (``markers["proxied"]``):
    a loop that prints only what it watches (``Mean Reward: 2.33``, ``"val_perplexity": 41.2``)."""
    out = []
    for raw in lines:
        line, kind = _to_number(raw, mapper, bare, proxy)
        if line is None:
            out.append(raw)
            continue
        out.append(f"step {markers['numbered']}: {line}")
        markers["numbered"] += 1
        if kind:
            markers[kind] += 1
    return out


def _to_number(raw: str, mapper: Mapper, bare: bool, proxy: bool) -> tuple[str | None, str]:
    """What :func:`number_lines` numbers of ``raw`` and the marker it counts under; ``(None, "")`` for a
    line it leaves as it is."""
    if bare:
        value = bare_value(raw)
        return (None, "") if value is None else (f"loss: {value!r}", "bare")
    text = clean(raw.strip()) if _DIGIT.search(raw) else ""
    if not text:
        return None, ""
    names = (k for k, _ in read_fields(text))
    if proxy:
        hit = any(mapper(k, False) == (True, "loss") or not PERPLEXITY.isdisjoint(tokens(k)) or names_objective(k)
                  for k in names)
        return (text, "proxied") if hit else (None, "")
    losses = [k for k in names if mapper(k, False) == (False, "loss") or (not is_val(tokens(k)) and is_part(k))]
    return (text, "keyed" if keyed(text, losses) else "") if losses else (None, "")


def keyed(text: str, names: list[str]) -> bool:
    """Whether one of ``names`` is printed as a field on ``text``: a colon or an equals sign after it.
    The first few names say it: a line of 100,000 loss parts is not searched 100,000 times."""
    return any(as_field(k, text) for k in names[:8])
