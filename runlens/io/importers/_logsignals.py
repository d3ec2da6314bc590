"""What a console log says in words besides its numbers: a value went non-finite, the run died.

Both console readers (:mod:`runlens.io.importers.text` and the Trainer dicts of
:mod:`runlens.io.importers.hf`) hand every line that is not a data line to
:meth:`Watch.see`, so a warning reads the same whichever way the numbers are
printed. Four kinds of line count:

* a warning that a non-finite loss was met ("NaN loss, skipping batch",
  Keras' "Batch 42: Invalid loss, terminating training"): the loss word, a
  non-finite (or "invalid") word and what was done about it (skipped,
  terminated, stopped). Counts on the line ("number of nan iterations: 0")
  that all read 0 say nothing happened;
* a loss scaler that skipped a step for an overflow at a scale of 1 or
  below ("reducing loss scale to 0.0", "Attempted loss scale: 1, reducing
  to 1"), or skipped most of the steps since the last line: at scale 1 the
  gradients are not amplified, so an overflow there means they are
  non-finite (or beyond fp16) as computed, and no step can be taken. A
  scaler that halves from 65536 a few times is finding its level: silent;
* a line with no step of its own that says the loss went non-finite (TF's
  "Model diverged with loss = NaN.", with no consequence named), or that
  opens with a loop's own check ("NaN detected", "NaN encountered": the
  value a training loop checks is its loss), or says such a check ended
  the run ("A NaN was detected ... Training has been terminated."): nothing else on it carries
  the value, so the words are the only record. A line with a step is not
  read so: its fields hold the value itself. The text reader says which
  lines carry no step (``stepless``);
* a Python exception line (``FloatingPointError: Loss became infinite or
  NaN at iteration=1587!``, ``torch.OutOfMemoryError: CUDA out of memory``).
  When no training line follows it, it is how the run ended: the run is
  ``crashed`` with that error (the ``crash_*`` detectors decode it). When
  its message says a loss or a backward function produced NaN/Inf, that is
  a non-finite event too, at the step the message names.
"""

from __future__ import annotations

import math
import re
from typing import Any

from runlens.io.importers._clean import clean
from runlens.io.importers._names import Mapper
from runlens.io.importers._textline import Line, read_fields
from runlens.io.reader.names import is_loss_term, tokens

Event = tuple[int, str, float, str]

NONFINITE = frozenset({"nan", "inf", "nonfinite", "infinite", "infinity"})
_GRAD_WORDS = frozenset({"grad", "grads", "gradient", "gradients"})
# A cheap gate: the words every rule below needs one of; most data lines have none.
GATE = re.compile(r"skip|overflow|error|exception|invalid", re.I)
# ``Name: message`` with Name a Python exception class (dotted, CamelCase, ending in Error/Exception; a
# bare ``Error:`` is a shell script's message, not an exception), after log prefixes like ``[rank0]:``.
_EXCEPTION = re.compile(r"^\s*(?:\[[^\]]{0,80}\]:?\s*)*((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception)|Exception))"
                        r":\s*(.*)$")
_MESSAGE_STEP = re.compile(r"\b(?:iteration|iter|step|batch)\s*[=:#]?\s*(\d{1,18})\b", re.I)
# "reducing loss scale to 0.0", "reducing to 1": the scale's new value (not "Reducing hysteresis to 1").
# fairseq: "overflow detected, setting loss scale to: 0.25" (it skips that update, unsaid).
_REDUCED_TO = re.compile(r"\b(?:reduc\w*\s+(?:(?:the\s+)?(?:loss\s+)?scale\s+)?"
                         r"|(?:set(?:ting)?|decreas\w*|lower\w*)\s+(?:the\s+)?(?:loss\s+)?scale\s+)to\s*:?\s*"
                         r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)", re.I)
_CONSEQUENCE = ("skip", "terminat", "stop", "abort")
# A loop's own guard that stopped the run for a loss it judged blown up ("Exception: Loss exploded",
# "RuntimeError: Loss diverged"): finite, so no non-finite event, but a divergence the code declared.
STATED_DIVERGED = re.compile(r"\b(?:loss(?:es)?|cost)\s+(?:has\s+|have\s+|is\s+|seems\s+to\s+be\s+)?"
                             r"(?:exploded|explodes|exploding|diverged|diverging|blew\s+up)\b"
                             r"|\b(?:model|training)\s+(?:has\s+)?diverged\b|\bdivergence\s+detected\b", re.I)
_EXPLODED_TO = re.compile(r"\bto\s+([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
# "Model diverged with loss = NaN.", "loss is inf": the loss said to be non-finite.
_STATED_NONFINITE = re.compile(r"(?<![A-Za-z])loss(?:es)?\s*(?:[:=]|\bis\b|\bwas\b|\bbec[oa]me[s]?\b)?\s*"
                               r"(?:nan|[-+]?inf(?:inity)?)\b", re.I)


# A training loop's own check, alone on its line: "NaN detected" (the Theano-era ``if numpy.isnan(cost):
# print('NaN detected')``), "NaN encountered, stopping". What went NaN is unsaid; the value a training
# loop checks is its loss. Only at the line's start: "no NaN detected" says the opposite.
_NAN_DETECTED = re.compile(r"\s*(?:nan|inf)s?\s+(?:detected|encountered)\b", re.I)
# A loop's NaN guard that ended the run, in a sentence of its own ("A NaN was detected and you have NaN
# protection enabled. Training has been terminated.", faceswap's): what it checks is the loss, as above.
_NAN_GUARD = re.compile(r"(?<!\bno )\b(?:a\s+)?(?:nan|inf)s?\b(?:\s+\w+){0,2}?\s+(?:detected|encountered|found)\b"
                        r".{0,120}?\b(?:terminat|stopp|abort|exit)", re.I)


def gated(text: str) -> bool:
    """Whether ``text`` holds one of the gate's words: what ``GATE.search`` finds, found sooner."""
    # A case-insensitive regex tries each word at each position: tens of microseconds on a long line,
    # for every line the reader reads by itself. An ASCII line lowered once and searched with ``in``
    # gives the same answer in a tenth of the time. Other text keeps the regex: its case folding
    # matches letters (``ſ``, the Kelvin sign) that ``lower()`` leaves outside ASCII.
    if text.isascii():
        low = text.lower()
        return "skip" in low or "overflow" in low or "error" in low or "exception" in low or "invalid" in low
    return GATE.search(text) is not None


class Watch:
    """The non-finite events and the final exception of one run, from its lines in words."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.error: dict[str, Any] | None = None  # the last exception, while no training line followed it
        # The loop's own words that the loss blew up, while no training line followed them: the run
        # stopped there. Words that training went on past were a warning the run outlived.
        self.stated: list[Event] = []

    def trained(self) -> None:
        """A training line came: an exception printed before it did not end the run."""
        self.error = None
        self.stated = []

    def all_events(self) -> list[Event]:
        """The events of the log, with the loop's stated blow-up when the run went no further."""
        return self.events + self.stated

    def partial(self, hit: Line, fields: list[tuple[str, float]], mapper: Mapper) -> None:
        """A progress line inside an epoch is dropped (a running mean of the epoch so far), but a running
        mean that is NaN/Inf means some batch's loss was: that is kept, as an event at the line's step.
        Which column is the loss is decided after the reading, so a training term named a loss
        (``regul_loss=nan`` beside ``disc=nan, tot=nan``) counts too: dropped, its NaN would be lost."""
        for name, value in fields:
            if math.isfinite(value):
                continue
            target = mapper(name, hit.eval_line)
            if target == (False, "loss") or (not target[0] and is_part(name)):
                self.events.append((hit.step, "nonfinite_loss", value, f"{name}: {value} (within an epoch)"))
                return

    def parts(self, step: int, fields: list[tuple[str, float]], mapper: Mapper) -> None:
        """A training line's loss parts (``SmoothL1=nan`` beside ``CrossEntropy=19``, ``loss_cls: nan``):
        the total is their sum, so one non-finite part makes it non-finite, printed or not. Kept as an
        event at the line's step unless the line's loss already says so."""
        bad = None
        for name, value in fields:
            if math.isfinite(value):
                continue
            if mapper(name, False) == (False, "loss"):
                return  # the loss column holds it
            if bad is None and is_part(name):
                bad = (name, value)
        if bad is not None:
            self.events.append((step, "nonfinite_loss", bad[1], f"loss part {bad[0]}: {bad[1]}"))

    def see(self, raw: str, step: int | None, interval: int | None = None, *, stepless: bool = False) -> bool:
        """Read one line about ``step`` (``interval``: the steps since the training line before, when the
        line is one itself; ``stepless``: the line carries no step nor data of its own); whether it said
        something."""
        head = raw[:2000]
        event = None
        if gated(head):
            m = _EXCEPTION.match(head)
            if m is not None:
                self._exception(m.group(1), m.group(2).strip(), step)
                return True
            event = _warning(head, step, interval)
        if event is None and stepless and ("oss" in head or "OSS" in head) and _STATED_NONFINITE.search(head):
            event = (step or 0, "nonfinite_loss", math.nan, clean(head.strip())[:300])
        if event is None and stepless and "nan" in head[:200].lower() and (
                _NAN_DETECTED.match(said := clean(head)) or _NAN_GUARD.search(said)):
            event = (step or 0, "nonfinite_loss", math.nan, said.strip()[:300])
        if event is None and stepless and ("xplod" in head or "iverg" in head) and STATED_DIVERGED.search(head):
            # The loop's own words that its loss blew up, on a line of their own ("Aborting, cost seems to
            # be exploding."): a spike event when nothing trained after it.
            to = _EXPLODED_TO.search(head)
            self.stated.append((step or 0, "loss_spike", float(to.group(1)) if to else math.nan,
                                clean(head.strip())[:300]))
            return True
        if event is not None:
            self.events.append(event)
        return event is not None

    def _exception(self, etype: str, message: str, step: int | None) -> None:
        at = _MESSAGE_STEP.search(message)
        where = int(at.group(1)) if at else step
        self.error = {"type": etype, "message": message[:2000], "traceback": "", "step": where}
        if STATED_DIVERGED.search(message[:2000]):
            to = _EXPLODED_TO.search(message[:2000])
            self.stated.append((where or 0, "loss_spike", float(to.group(1)) if to else math.nan,
                                f"{etype}: {message}"[:300]))
            return
        words = set(tokens(message[:2000].lower()))
        if words & NONFINITE or {"non", "finite"} <= words:
            # "Loss became NaN" is the loss; anomaly mode's "Function 'XBackward0' returned nan", clip_grad_norm_'s
            # "norm ... for gradients ... is non-finite", DyNet's "Magnitude of gradient is bad: -nan" a gradient.
            kind = "nonfinite_loss" if "loss" in words else (
                "nonfinite_grad" if "backward" in message.lower() or words & _GRAD_WORDS else None)
            if kind is not None:
                self.events.append((where or 0, kind, math.nan, f"{etype}: {message}"[:300]))


def _warning(head: str, step: int | None, interval: int | None) -> Event | None:
    """An events row for a warning line, or None."""
    low = head.lower()
    words = set(tokens(low))  # lower first: "NaN" is one word, not a camel-case pair
    text = clean(head.strip())
    scale = _REDUCED_TO.search(head) if "overflow" in low and ("skip" in low or "scale" in low) else None
    if scale is not None:
        # A scaler halves its scale on each overflow and skips that step; at 1 or below it no longer
        # amplifies anything, so the gradients themselves are non-finite: every step is lost.
        return (step or 0, "nonfinite_grad", math.nan, text[:300]) if float(scale.group(1)) <= 1 else None
    if "loss" not in words or not (words & (NONFINITE | {"invalid"})):
        return None
    if not any(w.startswith(_CONSEQUENCE) for w in words):
        return None
    return _counted(text, step, interval)


def _counted(text: str, step: int | None, interval: int | None) -> Event | None:
    """The warning's event, read against the counts on its line (Megatron's "number of skipped
    iterations: 3 | number of nan iterations: 0", on every line)."""
    nan_counts, skip_counts = [], []
    for k, v in read_fields(text):
        key = set(tokens(k.lower()))
        if key & NONFINITE:
            nan_counts.append(v)
        elif any(w.startswith("skip") for w in key):
            skip_counts.append(v)
    if any(v > 0 for v in nan_counts) or not (nan_counts or skip_counts):
        return (step or 0, "nonfinite_loss", math.nan, text[:300])
    skipped = max(skip_counts, default=0.0)
    # Steps skipped with a finite loss are a loss scaler's overflows: a few are it finding its level;
    # most of the steps since the last line means nearly every step's gradients are non-finite.
    if skipped > 0 and interval is not None and interval > 0 and 2 * skipped >= interval:
        return (step or 0, "nonfinite_grad", math.nan, text[:300])
    return None


def is_part(name: str) -> bool:
    """A loss term's name: a loss word or an error measure (``loss_cls``, ``SmoothL1``, ``giou_loss``)."""
    return is_loss_term(tokens(name))
