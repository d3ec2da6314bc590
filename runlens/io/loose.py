"""Whether a loose file met while walking a folder is a training log: by its name and head.

Discovery decides from a file's name and first 64 KiB, never by reading it
whole (the analysis reads each log once, and names one it then cannot
read). Roles are decided on names (:mod:`runlens.io.reader.names`): a log
names a loss, a perplexity or a gradient norm beside numbers.
"""

from __future__ import annotations

import os
import re

_LOOSE_MAX = 256 << 20  # a loose file larger than this is data, not a log
_SNIFF = 64 << 10  # past a model summary or a config dump, still one read
_TABLE_SUFFIXES = frozenset({".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".parquet"})
_TEXT_SUFFIXES = frozenset({".log", ".out", ".err", ".txt", ".md", ".markdown"})
_LOG_WORDS = frozenset({"log", "logs", "stdout", "stderr", "output", "train", "training"})
_UNSURE = "unsure"  # the head's names do not settle it: the text readers' sniff decides
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")  # a Markdown table's header rule
# A training step on a line, as the text reader takes one: a step word and a number, or ``[N/M]``.
_STEP = re.compile(r"(?i)(?:\b(?:global_?)?(?:step|steps|iter|iters|iteration|it|epoch|batch)\b\W{0,3}\d"
                   r"|\d+\s*/\s*\d+)")


def sniff_loose(path: str) -> str | None:
    """Whether the loose file at ``path`` is a training log, from its name and first 64 KiB.

    None: a log (analyze it). ``""``: not a log, say nothing (a CSV of data, a
    config, code, an image). Any other string: it looks like a log (a
    ``.log``/``.out`` name, or notes that name a loss) but is not read, and why.
    A log is a table whose header or keys name a loss, a perplexity or a
    gradient norm; a Markdown table whose header does; or text with at least
    three lines naming one beside a step (a log repeats its lines; prose
    that mentions a loss does not), as the text reader needs; else what the
    bounded sniff reads with a signal (YOLO's header lines and rows, whose
    ``total`` is proven the loss by its values, not its name).
    """
    name = os.path.basename(path).lower()
    stem, suffix = os.path.splitext(name.removesuffix(".gz"))
    by_name = suffix in _TEXT_SUFFIXES - {".txt", ".md", ".markdown"} or (
        not suffix and bool(set(_tokens(stem)) & _LOG_WORDS))
    if suffix not in _TABLE_SUFFIXES | _TEXT_SUFFIXES and not by_name:
        return ""
    try:
        if os.path.getsize(path) > _LOOSE_MAX:
            return f"larger than {_LOOSE_MAX >> 20} MiB: name it to analyze it" if by_name else ""
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return None if _names_signal(" ".join(pq.read_schema(path).names)) else ""
        from runlens.io.reader.source import head_bytes

        head = head_bytes(path, _SNIFF)  # decompressed for a .gz log
        why = _judge_head(head, suffix, by_name)
        if why is _UNSURE:
            # Console text whose names are its trainer's own (``s:12 trl:9.79``, ``{'loss': 1.4}``)
            # or whose log starts after a long preamble: the text readers' own sniff, which reads a
            # bounded head (a sample of 8 MiB at most), never the whole file.
            from pathlib import Path

            from runlens.io.importers.sniff import sniff_file

            found = sniff_file(Path(path))
            # ``table``: header lines and their rows among console output (YOLO's), whose loss the roles
            # proved (a ``total`` that sums its parts) where no name says it.
            why = None if found.kind in ("text", "hf", "markdown", "table") else (
                f"{found.reason or 'no training signal in its head'}" if by_name else "")
    except Exception:  # noqa: BLE001 - unreadable, a broken gzip or Parquet footer: the walk goes on
        return "cannot be read" if by_name else ""
    return why


def _judge_head(head: bytes, suffix: str, by_name: bool) -> str | None:
    from runlens.io.reader import shape_of

    if b"\x00" in head[:8192]:
        return "a binary file, not a training log" if by_name else ""
    text = head.decode("utf-8", "replace")
    lines = text.splitlines()[:-1] if len(head) == _SNIFF else text.splitlines()
    shape = shape_of(head)
    if shape in ("json", "jsonl") and _json_signal(text):
        return None
    if suffix in (".json", ".jsonl", ".ndjson") or shape == "jsonl":
        return ""  # a config or a data record, not a log
    if shape == "blocks" and _names_signal(text):
        return None  # a dump of key/value blocks (SB3's boxes) whose keys name a loss
    if suffix in (".csv", ".tsv") or shape == "delimited":
        header = next((line for line in lines if line.strip()), "")
        if _names_signal(header):
            return None
        if suffix in (".csv", ".tsv"):
            return ""  # a table whose header names no loss: data
    rule = [i for i in range(1, len(lines)) if _RULE.match(lines[i]) and lines[i - 1].lstrip().startswith("|")]
    if any(_names_signal(lines[i - 1]) for i in rule):
        return None
    markdown = suffix in (".md", ".markdown")
    carrying = sum(1 for line in lines if _STEP.search(line) and _names_signal(line))
    if carrying >= 3 and not markdown:
        return None
    if not markdown and (by_name or suffix == ".txt"):
        return _UNSURE
    if markdown and _names_signal(text):
        return (f"Markdown with no metrics table (a table whose header names a loss) in its first "
                f"{_SNIFF >> 10} KiB: name it to analyze it")
    if by_name:
        return (f"names no loss, perplexity or gradient norm beside a step in its first {_SNIFF >> 10} KiB: "
                "name it to analyze it")
    return ""


# A JSON key and a number (or a list starting with one) as its value: ``"loss": 2.3``, ``"loss": [2.3``.
_JSON_NUMBER = re.compile(r'"([^"\\]{1,80})"\s*:\s*(\[\s*)?(?:-?\d|-?Infinity|NaN|"-?\d)')


def _json_signal(text: str) -> bool:
    """At least two numbers under keys that name a signal (a list counts as two): a config's
    ``"loss": "ce"`` or one ``"loss_weight": 0.5`` is not a log."""
    n = sum(2 if m.group(2) else 1 for m in _JSON_NUMBER.finditer(text) if _names_signal(m.group(1)))
    return n >= 2


def _names_signal(text: str) -> bool:
    """Whether ``text`` names a training signal: a loss word, a perplexity, a gradient norm."""
    from runlens.io.reader.names import LOSS, PERPLEXITY

    words = _tokens(text)
    seen = set(words)
    if seen & (LOSS | PERPLEXITY) or "gradnorm" in seen:
        return True
    return any(a == "grad" and b == "norm" for a, b in zip(words, words[1:], strict=False))


def _tokens(text: str) -> tuple[str, ...]:
    # Imported here: the reader package loads pyarrow, which a walk that finds no loose file never needs.
    from runlens.io.reader.names import tokens

    return tokens(text)
