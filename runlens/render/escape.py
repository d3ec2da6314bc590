"""Escaping of run-supplied text for each reader: Markdown (and the HTML that
GitHub lets through Markdown), a terminal, a spreadsheet (CSV) and XML (JUnit).

Everything a report shows that came from a run (layer names, config values,
exception messages) may hold characters that Markdown or HTML would read as
syntax: a ``|`` ends a table cell, a backtick opens code, ``<img ...>`` is
raw HTML that GitHub renders. These helpers turn such text into inert
literal text; the HTML report relies on Jinja's autoescaping instead.

GitHub also acts on plain words: ``@name`` notifies a person or a team and
``#123`` links (and back-links) an issue. A run name or an exception message
holding them must not ping anyone from a PR comment, so Markdown output puts a
zero-width space after the ``@`` or ``#`` (invisible, but no longer a
reference), as Dependabot does in the release notes it quotes.

For the other readers: :func:`term_inline` / :func:`term_text` drop escape
sequences and control characters (a run name must not retitle the window or
clear the screen), :func:`csv_cell` neutralises cells a spreadsheet would
evaluate (OWASP's rule: a leading ``'``), :func:`xml_text` replaces what XML
1.0 cannot hold by a visible ``\\uXXXX`` escape.
"""

from __future__ import annotations

import html
import re
from typing import overload

from markupsafe import Markup, escape

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
# Bidirectional embeddings, overrides, isolates and marks: a run name holding U+202E shows
# its own title reversed, and text after it too. Removed from every reader's text.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


# GitHub's mention and issue-reference autolinks; an `@` inside a word (an e-mail
# address) is not a mention, so it is left alone.
_MENTION = re.compile(r"(?<![\w.+-])@(?=[A-Za-z0-9])")
_ISSUE_REF = re.compile(r"(#|\bGH-)(?=\d)", re.IGNORECASE)
_ZWSP = "\u200b"


def _entities(text: str) -> str:
    return "".join(_ENTITIES.get(ch, ch) for ch in text)


def no_mentions(text: str) -> str:
    """``text`` with ``@user`` and ``#123`` made inert for GitHub (a zero-width space after the sign)."""
    return _ISSUE_REF.sub(lambda m: m.group(1) + _ZWSP, _MENTION.sub("@" + _ZWSP, text))


def _plain(value: object) -> str:
    """``value`` as text without control characters or bidi controls (newlines and tabs kept)."""
    return _BIDI.sub("", _CONTROL.sub("", str(value)))


@overload
def html_value(value: str) -> str: ...
@overload
def html_value(value: object) -> object: ...
def html_value(value: object) -> object:
    """Jinja's ``finalize`` for every HTML template: a plain string loses its control characters
    and bidi controls before autoescaping (a run name cannot reverse the ``<title>`` or ``<h1>``);
    markup runlens made itself (``Markup``) and non-strings pass unchanged."""
    return _plain(value) if type(value) is str else value


_WORD_END = re.compile(r"(?<=[-_./])")


def wordbreaks(text: str) -> Markup:
    """``text`` escaped, with a line-break opportunity (``<wbr>``) after each ``_ - . /``: a name
    such as ``late_loss_variance`` wraps between its words, never inside one."""
    return Markup("<wbr>").join(escape(part) for part in _WORD_END.split(html_value(str(text))))


def md_html(value: object) -> str:
    """``value`` as HTML text inside Markdown (a ``<summary>``): entities, one line, no mentions."""
    return no_mentions(html.escape(" ".join(_plain(value).split()), quote=True))


def md_inline(value: object) -> str:
    """``value`` as literal Markdown text on one line (paragraphs, list items, headings)."""
    text = _plain(value)
    text = _NEWLINES.sub(" ", text)
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), text)
    return no_mentions(_entities(text))


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
    text = _plain(text).replace("\r\n", "\n").replace("\r", "\n")
    if tail is not None and len(text) > tail:
        cut = text.find("\n", len(text) - tail)
        cut = len(text) - tail if cut < 0 else cut + 1
        text = f"… ({text.count(chr(10), 0, cut):,} lines above not shown)\n{text[cut:]}"
    opening, closing = md_code_fence(text)
    return f"{opening}{lang}\n{text.rstrip()}\n{closing}"


def md_code_span(value: object) -> str:
    """``value`` as an inline code span; falls back to escaped text when a
    span cannot hold it (newlines, or backticks that GFM tables mangle)."""
    text = _NEWLINES.sub(" ", _plain(value))
    if "`" in text or "|" in text or not text.strip():
        return md_inline(text)
    # Inside a code span entities are shown literally, so <, > stay as they are
    # (GitHub does not read tags inside code spans).
    return f"`{text}`"


# -- terminal -------------------------------------------------------------------

# ESC sequences: CSI (colours, cursor, clear screen), OSC (window title, hyperlinks)
# up to BEL or ST, DCS/SOS/PM/APC strings, and two-character escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*(?:\x1b\\)?|.)?",
                   re.DOTALL)
# C0 and C1 controls, DEL, and the bidirectional overrides that reorder what a line shows.
_TERM_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_TERM_SPACE = re.compile(r"[\t\n\r\u2028\u2029\x85]")


def term_text(value: object) -> str:
    """Run-supplied text for a terminal: escape sequences and control characters removed,
    newlines and tabs kept (a traceback keeps its lines)."""
    text = _ANSI.sub("", str(value)).replace("\r\n", "\n").replace("\r", "\n")
    return _TERM_CONTROL.sub("", text.replace("\u2028", "\n").replace("\u2029", "\n").replace("\x85", "\n"))


def term_inline(value: object) -> str:
    """Run-supplied text for one terminal line: as :func:`term_text`, line breaks and tabs as spaces."""
    return _TERM_CONTROL.sub("", _TERM_SPACE.sub(" ", _ANSI.sub("", str(value))))


# -- spreadsheets ---------------------------------------------------------------

# OWASP "CSV injection": a cell starting with one of these is a formula to Excel,
# LibreOffice and Google Sheets (full-width forms too, which some of them fold).
_FORMULA_START = tuple("=+-@\t\r\n") + ("\uff1d", "\uff0b", "\uff0d", "\uff20")


def csv_cell(value: object) -> object:
    """A CSV cell that a spreadsheet shows as text: a string starting like a formula gets a
    leading ``'``. Numbers are left as they are (a negative loss is a number, not a formula).

    A bare CR becomes a newline: Python's ``csv`` quotes a cell holding its line terminator's
    characters only, so with ``lineterminator="\n"`` a lone CR went out unquoted and a
    spreadsheet split the row there, starting a new line (maybe a formula) mid-cell. Bidi
    controls are removed."""
    if not isinstance(value, str):
        return value
    value = _BIDI.sub("", value.replace("\r\n", "\n").replace("\r", "\n"))
    return "'" + value if value.startswith(_FORMULA_START) else value


# -- XML --------------------------------------------------------------------------

# What XML 1.0 cannot hold at all, even as a character reference: C0 controls other
# than tab/newline/CR, lone surrogates, U+FFFE and U+FFFF.
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: object) -> str:
    """``value`` as text XML 1.0 can hold: each forbidden character as a visible ``\\uXXXX``
    (``\\x1b`` for a control) escape. The XML writer escapes ``<``, ``&`` and quotes."""
    return _XML_BAD.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii")
                        if ord(m.group()) < 0xD800 else f"\\u{ord(m.group()):04x}", str(value))
