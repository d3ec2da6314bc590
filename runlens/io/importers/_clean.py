"""A console line cleaned of what never carries a metric: colour codes, e-mail and Markdown quoting, a
leading timestamp and logger prefixes; runs of spaces squeezed to one; and a scalar printed inside its
framework's wrapper unwrapped to its number.

A leaf of the console-line reader (:mod:`runlens.io.importers._textline`, whose docstring lists the
prefixes).
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]")
_QUOTE = re.compile(r"^(?:[ \t]*>)+[ \t]?")
_PREFIXES = re.compile(
    r"^\s*(?:"
    r"\[?\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?[\s,:-]*"
    r"|\[?\d{1,2}/\d{1,2}(?:/\d{2,4})? \d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]?[\s,:-]*"
    r"|\[?\d{4}/\d{1,2}/\d{1,2} \d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]?[\s,:-]*"
    r"|[\w.]+ (?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL):\s*"
    r"|\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s+"
    r"|[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+\S+:\d+\]\s*"
    r"|(?:-\s*)?[\w.$]+\s+-\s+(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL)\s+-\s*"
    r"|(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL)(?::[\w.]+:|\s+[\w.$]+:\d+\s+-\s*|\s*[:|\]-]\s*)"
    r"|\[(?:INFO|WARNING|WARN|DEBUG|ERROR|rank\d+)\]\s*"
    # loguru's default: "| INFO     | package.module:function:86 - " after its timestamp.
    r"|\|\s*(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\s*\|\s*[\w.<>-]+:[\w<>-]+:\d+\s*-\s*"
    r")+")
_RUNS = re.compile(r"[ \t]{2,}")


def clean(raw: str) -> str:
    """The line without colour codes, quoting and timestamp/logger prefixes, its wrapped scalars
    unwrapped (:func:`unwrap`). The full parse of a line's shape calls it, not the cached replay: a line
    it changed past its prefix is not replayed from its shape (the reader's plans index the raw line)."""
    return unwrap(strip_prefixes(raw))


def strip_prefixes(raw: str) -> str:
    """The line without colour codes, quoting and timestamp/logger prefixes (:func:`clean` before it
    unwraps scalars): a suffix of the raw line unless colour codes or quoting were taken out."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    if raw.lstrip().startswith(">"):
        raw = _QUOTE.sub("", raw)
    m = _PREFIXES.match(raw)
    return raw[m.end():] if m else raw


def squeeze(raw: str) -> str:
    """``raw`` with every run of spaces and tabs as one space: the step and field patterns allow
    spaces around optional separators (``epoch  :  3``), which backtrack on long runs of them; with
    runs of one, no pattern here is worse than linear on a line."""
    return _RUNS.sub(" ", raw) if ("  " in raw or "\t" in raw) else raw


_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf))"
# A number with a fraction or an exponent: a value, where a bracketed integer is a counter (``Epoch: [0]``).
_FRACTION = r"[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+"
#: A number with a fraction or an exponent: a measured value, where a whole number is often a counter.
FRACTION = _FRACTION
# One number inside a framework's print of a scalar (or of a one-element array), with the settings that
# follow it: PyTorch's ``tensor([2.3026], device='cuda:0')``, JAX's ``Array(2.30, dtype=float32)``,
# NumPy's ``array(2.3)`` and NumPy 2's ``np.float32(2.3)``, TensorFlow's ``tf.Tensor(2.3, shape=(),
# dtype=float32)`` and eager ``<tf.Tensor: shape=(), dtype=float32, numpy=2.3>``, hasktorch's
# ``Tensor Float []  0.34``. A tensor of several numbers is left alone: it is no scalar.
_WRAPPED = re.compile(
    rf"\b(?:tf\.)?(?:tensor|Tensor|DeviceArray|Array|array)\(\s*\[*\s*{_NUM}\s*\]*\s*"
    rf"(?:,\s*[A-Za-z_]\w*\s*=(?:[^()\n]|\(\s*\))*)?\)"
    rf"|<tf\.Tensor:[^<>\n]*?numpy={_NUM}>"
    rf"|\bnp\.(?:float|int|uint)\d*\(\s*{_NUM}\s*\)"
    rf"|\bTensor (?:Float|Double|Half|Int\d*) \[\]\s+{_NUM}")
# A one-number list right after a name's ``:`` or ``=`` (``loss: [2.30]``, ``loss: [nan]``), of a value with a
# fraction or an exponent, or nan/inf: ``Epoch: [0]`` is a counter.
_ONE_LIST = re.compile(rf"([:=]\s?)\[\s*({_FRACTION}|[-+]?(?:nan|inf))\s*\](?![\[\w])", re.I)
# TensorFlow's ``tf.Print(x, [x], "CrossE")`` writes the message glued to the bracketed values:
# ``CrossE[472.02966]``, ``CrossE[nan]``; one number with a fraction (or nan/inf) is that name's value,
# where ``layer[3]`` is an index.
# Found from its bracket (a search that starts at every "[", not at every letter of the line); the name
# before it is checked in :func:`_glued`.
_GLUED_LIST = re.compile(rf"(?<=[\w.])\[\s*({_FRACTION}|[-+]?(?:nan|inf))\s*\](?![\[\w])")


# Python 2's ``print('training cost:', cost)`` prints a tuple: ``('training cost:', 6.92)`` (a NumPy
# scalar inside it unwrapped above) is the message and its value.
_PY2_PRINT = re.compile(rf"^\s*\(\s*(['\"])([^'\"]{{1,80}})\1\s*,\s*{_NUM}\s*\)\s*$")


def _glued(line: str) -> str:
    """``line`` with each ``Name[value]`` written ``Name: value`` (the name starts with a letter or an
    underscore and follows no closing bracket)."""
    out, at = [], 0
    for m in _GLUED_LIST.finditer(line):
        start = m.start()
        while start > at and (line[start - 1].isalnum() or line[start - 1] in "._"):
            start -= 1  # back over the name: a few characters
        first = line[start]
        if not (first.isalpha() or first == "_") or (start > 0 and line[start - 1] == "]"):
            continue
        out += [line[at:m.start()], ": ", m.group(1)]
        at = m.end()
    return "".join(out) + line[at:] if out else line


def _number(m: re.Match) -> str:
    return next(g for g in m.groups() if g is not None)


# A leader of dots (or an ellipsis) after a name, a number or a bracket, before a value or the next
# name, is a separator (Chainer's ``batch 0/82783... training loss is...2.35e8``, a HAR trainer's
# ``Epoch: 289/500...Train Loss: 0.1521...Val Loss: 0.7511...``); one ending the line says nothing.
_LEADER = re.compile(r"(?<=[\w)\]%:])[ \t]*(?:\.{2,}|\u2026)[ \t]*(?=[-+]?\.?\d|[A-Za-z(\[])")
# A leader of three dashes or more between a name and its value is a separator too (BasicIRSTD's
# ``Epoch---9, total_loss---0.837803``): glued, the name swallowed the number. A flag's ``--lr`` has
# no name before its dashes, a rule of dashes no number after them.
_DASHES = re.compile(r"(?<=[A-Za-z_])-{3,}(?=\d|\.\d)")


def unwrap(line: str) -> str:
    """``line`` with each scalar printed inside a framework's wrapper as its bare number: what a loop
    that prints ``loss`` rather than ``loss.item()`` shows; a leader of dots read as a space. Lines with
    none (most) are returned as they are."""
    if ".." in line or "\u2026" in line:
        line = _LEADER.sub(" ", line)
    if "---" in line:
        line = _DASHES.sub(" ", line)
    if "ensor" in line or "rray" in line or "np." in line:
        line = _WRAPPED.sub(_number, line)
    if ":[" in line or ": [" in line or "=[" in line or "= [" in line:
        line = _ONE_LIST.sub(r"\1\2", line)
    if "[" in line:
        line = _glued(line)
    if line.lstrip().startswith("(") and (m := _PY2_PRINT.match(line)):
        line = f"{m.group(2)} {m.group(3)}"
    if "(tracked)" in line or "param(" in line:
        line = _TRACKED.sub(_number, line)
    if ")=" in line or ") =" in line:
        line = _CALL_NAME.sub(r"\1 =", _shown_tuple(line) if line.lstrip().startswith("(") else line)
    return line


# A call shown as its value's name (Julia's ``@show loss(x, y)``: ``loss(x, y) = 0.0913``; Python's
# ``f"{loss_fn(out, y)=}"``): the function's name names it. Arguments holding a ``=`` are settings of a
# printed object (``Namespace(lr=0.1)``), not a call's; one level of brackets or parentheses inside.
_CALL_NAME = re.compile(r"\b([A-Za-z_][\w.]*)\((?:[^()=\n]|\([^()=\n]*\)){0,200}\)\s*=(?!=)")
# A tuple shown beside its values (Julia's ``@show (i, loss(d))``: ``(i, loss(d)) = (1, 0.296)``).
_TUPLE = re.compile(r"^\s*\((.{1,400})\)\s*=\s*\(([^()]{1,400})\)\s*$")
_ARGS = re.compile(r"\([^()]*\)")


def _shown_tuple(line: str) -> str:
    """``(a, f(x)) = (1, 0.5)`` as ``a = 1, f = 0.5``: each name beside its value, a call by its function's
    name; a line whose names and values do not pair up, or whose values are not all numbers, as it is."""
    m = _TUPLE.match(line)
    if m is None:
        return line
    names = [n.strip() for n in _ARGS.sub("", m.group(1)).split(",")]
    values = [v.strip() for v in m.group(2).split(",")]
    if len(names) != len(values) or not all(re.fullmatch(_NUM, v, re.I) for v in values):
        return line
    return ", ".join(f"{n} = {v}" for n, v in zip(names, values, strict=True))


# Flux's tracked scalars: ``param(0.0913)`` and ``0.2001 (tracked)`` are the numbers they hold.
_TRACKED = re.compile(rf"\bparam\(\s*{_NUM}\s*\)|{_NUM} \(tracked\)")
