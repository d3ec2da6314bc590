"""Escaping of run-supplied text for Markdown (and the HTML that GitHub lets
through Markdown).

Everything a report shows that came from a run (layer names, config values,
exception messages) may hold characters that Markdown or HTML would read as
syntax: a ``|`` ends a table cell, a backtick opens code, ``<img ...>`` is
raw HTML that GitHub renders. These helpers turn such text into inert
literal text; the HTML report relies on Jinja's autoescaping instead.
"""

from __future__ import annotations

import re

# Punctuation that opens or closes inline syntax anywhere in a line. `(` and
# `!` only matter next to `[`, which is escaped, so they are left alone to
# keep the source readable.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~$])")
# What only means something at the start of a line: a heading, a bullet or an
# ordered-list number followed by a space, or a line of only `-`/`=` (a
# setext underline or a thematic break).
_LINE_START = re.compile(r"^(\s*(?:\d+)?)([#+.)-](?=\s|$)|[=-](?=[\s=-]*$))")
# HTML-significant characters go to entities: a backslash does not stop
# GitHub from reading `<img` as a tag, and `&` could start an entity.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
_NEWLINES = re.compile(r"\r\n|\r|\n|\u2028|\u2029|\x85")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _entities(text: str) -> str:
    return "".join(_ENTITIES.get(ch, ch) for ch in text)


def md_inline(value: object) -> str:
    """``value`` as literal Markdown text on one line (paragraphs, list items)."""
    text = _CONTROL.sub("", str(value))
    text = _NEWLINES.sub(" ", text)
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), text)
    return _entities(text)


def md_cell(value: object) -> str:
    """``value`` as the content of a GFM table cell.

    On top of :func:`md_inline`: an empty cell gets a placeholder so the row
    keeps its column count visible, and leading/trailing space is trimmed
    because GFM trims it anyway.
    """
    text = md_inline(value).strip()
    return text if text else " "


def md_code_fence(text: str) -> tuple[str, str]:
    """The opening and closing fence for a code block holding ``text``.

    The fence is one backtick longer than the longest backtick run inside,
    so a traceback that happens to contain a fence cannot close the block.
    """
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return fence, fence


def md_code_block(text: str, lang: str = "", *, tail: int | None = None) -> str:
    """``text`` inside a fenced code block that nothing in it can close.

    ``tail`` keeps only about the last ``tail`` characters, on a line
    boundary (the end of a traceback is where its cause is).
    """
    text = _CONTROL.sub("", str(text)).replace("\r\n", "\n").replace("\r", "\n")
    if tail is not None and len(text) > tail:
        cut = text.find("\n", len(text) - tail)
        cut = len(text) - tail if cut < 0 else cut + 1
        text = f"… ({text.count(chr(10), 0, cut):,} lines above not shown)\n{text[cut:]}"
    opening, closing = md_code_fence(text)
    return f"{opening}{lang}\n{text.rstrip()}\n{closing}"


def md_code_span(value: object) -> str:
    """``value`` as an inline code span; falls back to escaped text when a
    span cannot hold it (newlines, or backticks that GFM tables mangle)."""
    text = _NEWLINES.sub(" ", _CONTROL.sub("", str(value)))
    if "`" in text or "|" in text or not text.strip():
        return md_inline(text)
    # Inside a code span entities are shown literally, so <, > stay as they are
    # (GitHub does not read tags inside code spans).
    return f"`{text}`"
