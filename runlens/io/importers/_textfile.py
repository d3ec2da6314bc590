"""A text log's file: refused when it is no text (missing, empty, binary), and its encoding."""

from __future__ import annotations

from pathlib import Path

from runlens.errors import ImportFailedError
from runlens.io.reader.source import open_binary

_SNIFF = 8192


def text_encoding(head: bytes) -> str:
    """UTF-16 when the bytes start with its byte-order mark (PowerShell's ``>`` writes it), else UTF-8."""
    return "utf-16" if head[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8"


def check_text_file(path: Path) -> str:
    """Refuse what is not a text log (a missing, empty or binary file); the encoding to read it with."""
    try:
        with open_binary(path) as f:
            head = f.read(_SNIFF)
    except (OSError, EOFError) as exc:
        raise ImportFailedError(f"{path}: cannot read ({exc})") from exc
    encoding = text_encoding(head)
    if encoding == "utf-16":
        head = head.decode("utf-16", "replace").encode("utf-8", "replace")
    if not head.strip():
        raise ImportFailedError(f"{path}: empty file")
    if b"\x00" in head:
        raise ImportFailedError(f"{path}: a binary file, not a text log")
    return encoding
