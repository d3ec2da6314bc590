"""A metrics history printed by Python (``print(history.history)``): its literal syntax, read safely.

A Keras ``History`` dict printed rather than dumped is the JSON reader's
dict of lists in Python's spelling: single quotes, tuples, ``nan``/``inf``
as bare names, ``None``, and NumPy 2's scalar reprs (``np.float64(0.5)``).
The text is parsed with :func:`ast.parse` and only literal nodes are
turned into values (never ``eval``): any other expression makes the whole
text "not a literal". Python's parser needs many times the text's size in
memory, so texts over :data:`MAX_LITERAL` bytes are not tried.
"""

from __future__ import annotations

import ast
import math
import re

MAX_LITERAL = 16 << 20
_NAMES = {"nan": math.nan, "NaN": math.nan, "inf": math.inf, "Infinity": math.inf, "None": None,
          "True": True, "False": False}
# Scalar wrappers a printed list of NumPy or PyTorch values shows around each number.
_WRAPPERS = frozenset({"float", "float16", "float32", "float64", "int32", "int64", "tensor", "array"})


# A REPL's own lines around what it printed: ``>>> print(h.history)``, ``In [3]: h.history``, ``Out[3]:``.
_PROMPT = re.compile(r"^(?:>>>|\.\.\.|In \[\d+\]:)(?:\s|$)")
_OUT = re.compile(r"^Out\[\d+\]:\s*")


class _NotLiteral(Exception):
    pass


def unprompted(text: str) -> str:
    """``text`` without the REPL prompt lines before and after what was printed (a paste of a session)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not _PROMPT.match(ln)]
    if lines:
        lines[0] = _OUT.sub("", lines[0], count=1)
    return "\n".join(lines)


def prompted(text: str) -> bool:
    """Whether ``text`` is a REPL paste whose printed value starts like a literal (``{``, ``[``)."""
    first = text.lstrip().split("\n", 1)[0]
    if not _PROMPT.match(first):
        return False
    return unprompted(text[:65536]).lstrip().startswith(("{", "["))


def loads(text: str) -> object:
    """The value of the Python literal ``text`` (REPL prompt lines around it left out); ValueError
    when it is not one (or is too large)."""
    if len(text) > MAX_LITERAL:
        raise ValueError("too large to be read as a Python literal")
    return literal(unprompted(text))


def literal(text: str) -> object:
    """The value of ``text`` as it stands, one Python literal (a log line's dict: a line of its own
    text that starts like a prompt is part of the value, not a REPL's); ValueError when it is not one."""
    if len(text) > MAX_LITERAL:
        raise ValueError("too large to be read as a Python literal")
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _value(tree.body)
    except (SyntaxError, _NotLiteral, RecursionError, MemoryError, ValueError, TypeError):
        raise ValueError("not a Python literal") from None


def _value(node: ast.expr) -> object:
    if isinstance(node, ast.Constant):
        # Bytes, complex numbers and ``...`` are literals too, with no number a log reads: nothing.
        return node.value if isinstance(node.value, (int, float, str, bool, type(None))) else None
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _NotLiteral  # a ``**spread``
        return {_key(k): _value(v) for k, v in zip(node.keys, node.values, strict=True) if k is not None}
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_value(x) for x in node.elts]
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call) and len(node.args) == 1 and _wrapper(node.func):
        v = _value(node.args[0])
        if isinstance(v, (int, float, str)):
            return v
    raise _NotLiteral


def _key(node: ast.expr) -> str:
    if isinstance(node, ast.Tuple):
        # ``('train', 'loss')`` (a pandas MultiIndex's ``to_dict()``): the path of names, as nested
        # dicts are flattened.
        return "/".join(_key(x) for x in node.elts)
    if isinstance(node, ast.Constant):
        return str(node.value)  # ``True``, ``None``, ``1``: the key as Python prints it
    v = _value(node)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)  # ``nan``, ``-1``
    raise _NotLiteral


def _wrapper(func: ast.expr) -> bool:
    """``float``, ``np.float64``, ``numpy.float32``, ``torch.tensor``: a call that only wraps a number."""
    if isinstance(func, ast.Name):
        return func.id in _WRAPPERS
    return isinstance(func, ast.Attribute) and func.attr in _WRAPPERS and isinstance(func.value, ast.Name)
