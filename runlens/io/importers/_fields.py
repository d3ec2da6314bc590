"""A console line's numeric fields: each a name (up to seven words: ``elapsed time per iteration
(ms)``) and a number, joined by ``:``, ``=``, ``is`` or a space; separators between fields are ``|``,
``,``, `` - ``, ``;``, brackets or whitespace. A number may carry a unit (``1099.34ms``, ``15.34%``,
``4.2s``); ``2:46:39`` (a duration) and ``100/735`` (a counter) are not numbers. ``nan``, ``-nan``,
``inf``, ``Infinity``, PaddleOCR's ``nanxxx``, MSVC's ``1.#QNAN`` and torch's ``tensor(nan)`` are numbers:
data. A bare word-number followed by another name (``loss nan lr 0.001``) is the value of the name before
it, unless that name ends in prose (``number of nan iterations: 0`` is one name). A line of ``value
name`` parts (``10.5 loss, 3e-4 LR``) is read by :mod:`._postfix`. :mod:`._textline` finds the step.
"""

from __future__ import annotations

import re

from runlens.io.importers._mapping import MSVC as _MSVC
from runlens.io.importers._mapping import WORDNUM as _WORDNUM
from runlens.io.importers._mapping import to_float
from runlens.io.importers._postfix import postfix_fields
from runlens.io.importers._roundline import qualified
from runlens.io.importers._textsteps import rate_left_off, time_unit

_WORD_ONLY = re.compile(_WORDNUM)
# A possessive ends a name's first word (LightGBM's ``training's binary_logloss``): without it, the
# name would start after the apostrophe (``s binary_logloss``).
# So does an abbreviation's dot, on a word of at most four letters, later words too (``val. loss``,
# ``mem avg. loss``): the name goes on after it; a sentence's last word (``records/second. Loss``) does not.
# An underscore before a decimal number ends a name: WaveGlow's ``loss_-4.0655`` is loss = -4.0655.
# A name may start with a number joined to a word by an underscore (``3d_train``), not with a unit (``32s``).
_KEY_WORD = (r"(?:[A-Za-z]{1,4}\.(?= [A-Za-z])|\d+[A-Za-z]+_[A-Za-z][\w/()%#@-]*|[A-Za-z_](?:(?!_[-+]?\d+\.\d)[\w/()%#@-])*"
             r"(?:\.[A-Za-z_0-9][\w/()%#@-]*)*(?:'s(?= ))?)")
_KEY_MORE = r"(?:[A-Za-z]{1,4}\.(?= [A-Za-z])|[A-Za-z_(][\w/()%#@-]*(?:\.[A-Za-z_0-9][\w/()%#@-]*)*)"
# A word-number (nan, inf) then a space and a word is part of a name ("number of nan iterations: 0").
# A quoted name and value (PaddleDetection's ``'loss': '24.061707'``, a dict's repr printed as text)
# read as the bare ones: the quotes close the name and enclose the number.
_FIELD = re.compile(
    rf"(?<![\w.\-])(?P<key>{_KEY_WORD}(?: {_KEY_MORE}){{0,6}}?)['\"]?"
    rf"(?:\s*(?P<sep>[:=]|\bis\b)|(?P<glued>_)(?=[-+]?\d+\.\d))?\s*(?P<q>['\"](?=[-+.\w]+['\"]))?(?P<tensor>tensor\(\s*)?"
    rf"(?:(?P<word>{_MSVC}|(?:{_WORDNUM})(?(sep)|(?(tensor)|(?! [A-Za-z_]))))"
    rf"|%?(?P<val>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))(?P<unit>[A-Za-z%µ]*(?:/[A-Za-z]+)?))"
    rf"(?(tensor)(?:\s*,[^()\n]*)?\))(?(q)['\"])(?![\w/:]|\.\d)")
_IGNORED_KEYS = frozenset({"eta", "in", "of", "at", "to", "for", "the", "with", "on", "and", "by", "from", "is", "was",
                           "took", "#", "time left", "remaining"})
# A capital letter closing a name is its tag, not the article: faceswap's ``Loss A``, ``Loss B``.
_LETTER_TAG = re.compile(r"[A-Z]")
# Words of prose, never of a metric name: a "key" holding one is a sentence ("but training continued for").
_PROSE = frozenset({"but", "the", "a", "an", "than", "after", "while", "and", "or", "which", "that", "was",
                    "were", "has", "had", "with", "to", "for", "from", "on", "at", "this", "it", "we", "when",
                    "so", "is", "are", "be", "by", "into", "about", "its", "our", "you", "i", "if", "then"})

_PROSE_OR_IGNORED = _PROSE | _IGNORED_KEYS


def read_fields(text: str) -> list[tuple[str, float]]:
    """``(name, value)`` of every numeric field in ``text``, in order."""
    return [(k, v) for k, v, _ in read_field_spans(text)]


def read_field_spans(text: str, offset: int = 0) -> list[tuple[str, float, tuple[int, int]]]:
    """``(name, value, span of the number)`` of every numeric field in ``text``."""
    if (post := postfix_fields(text, offset)) is not None:
        return post
    if "(" in text:
        # A running average in parentheses after a value, gone non-finite (the ImageNet example's
        # ``Loss nan (nan)  Acc@1 0.1 (0.2)``): a number there is no name, and neither is its NaN, which
        # the name pattern would otherwise begin the next field's name with (``nan) Acc@1``). Masked
        # in place, so the spans stay the line's.
        text = _PAREN_NONFINITE.sub(lambda m: m.group(1) + "0" * len(m.group(2)), text)
    out: list[tuple[str, float, tuple[int, int]]] = []
    used = 0  # the end of a unit word read as the value before's: no name starts with it
    for m in _FIELD.finditer(text):
        key, start, prev = m.group("key"), m.start("key") + offset, 0
        if m.start("key") < used:
            lead = len(key) - len(key[used - m.start("key"):].lstrip())
            key, start = key[lead:], start + lead
        for word, at in _bare_words(key):
            # "loss nan lr 0.001": a name, a bare nan/inf that is its value, then the next field's name.
            _keep(out, key[prev:at].strip(), to_float(word), (start + at, start + at + len(word)))
            prev = at + len(word)
        which = "val" if m.group("val") is not None else "word"
        a, b = m.span(which)
        unit, used = time_unit(m.group("unit"), text, m.end())
        # A number in seconds is a duration whatever its name says (PaddleDetection's
        # ``batch_cost: 0.00039 sec``: "cost" is a loss word): the unit joins the name.
        name = _LEADING.sub("", key[prev:].strip()) if m.group("sep") else key[prev:].strip()
        _keep(out, f"{name} ({unit})" if unit and name.lower() not in _IGNORED_KEYS else name,
              to_float(m.group(which)), (a + offset, b + offset))
    return qualified(text, out, offset)


def _bare_words(key: str) -> list[tuple[str, int]]:
    """The word-numbers inside a multi-word name that are values of their own, with their offsets in it:
    the field pattern reads a bare ``nan`` followed by a word as part of a name ("number of nan
    iterations: 0"); it is a value when the word before it is a name, not prose ("loss nan lr 0.001").
    """
    if " " not in key:
        return []
    words, out, at = key.split(" "), [], 0
    for i, w in enumerate(words):
        if (0 < i < len(words) - 1 and _WORD_ONLY.fullmatch(w) and not _WORD_ONLY.fullmatch(words[i - 1])
                and words[i - 1].lower() not in _PROSE_OR_IGNORED):
            out.append((w, at))
        at += len(w) + 1
    return out


#: A running average in parentheses after a value, non-finite (``Loss nan (nan)``): its value is masked.
_PAREN_NONFINITE = re.compile(r"((?:\d|\b(?:nan|inf))\s+\()(\s*[-+]?(?:nan|inf(?:inity)?)\s*)(?=\))", re.I)
#: A logger's file and line ("ctc-loss.cc:182") is no field, whatever its name holds.
_SOURCE_FILE = re.compile(r"\.(?:cc|cpp|cxx|c|h|hpp|py|go|rs|java|js|ts|lua|jl|cu|scala)$")
#: Words opening a clause before a name joined to its value by ``:``, ``=`` or ``is`` ("the Average training
#: loss is ..."): left off it. Without the join the phrase stays prose ("the loss reached 0.5").
_LEADING = re.compile(r"^(?:(?:the|and|an|a)\s+)+(?=\S)", re.I)


def _untagged(words: list[str]) -> list[str]:
    """A name's words without a capital letter closing it, a tag (``Loss A``), not the article."""
    return words[:-1] if len(words) > 1 and _LETTER_TAG.fullmatch(words[-1]) else words


def _keep(out: list, key: str, value: float, span: tuple[int, int]) -> None:
    key = rate_left_off(key)
    low = key.lower()
    if not key or low in _IGNORED_KEYS or len(key) > 48 or key.count("/") > 1 or "://" in key or _SOURCE_FILE.search(low):
        return
    if " " in low and any(w.lower() in _PROSE for w in _untagged(key.split())):
        return
    out.append((key, value, span))
