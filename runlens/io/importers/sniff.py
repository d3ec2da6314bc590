"""Which importer reads a file: decided from its bytes, never from its name alone.

The first 256 KiB are looked at (the whole file for a JSON document under
64 MiB). In order:

- TFRecord framing (a small length, then an ``Event`` starting with its
  ``wall_time`` field) or a ``tfevents`` name: ``tensorboard``;
- ``PAR1`` magic: ``table`` (Parquet); the W&B ``:W&B`` datastore header:
  ``wandb``;
- NUL bytes: a binary file, read by none;
- a JSON document holding ``log_history``: ``hf`` (a ``trainer_state.json``
  under any name);
- lines that are each a JSON object with a step key: ``jsonl``;
- a header and rows of comma-separated cells: ``wandb`` for a W&B chart
  export (``<run> - <metric>`` columns), ``lightning-csv`` for a CSVLogger
  ``metrics.csv`` (``epoch`` and ``step`` columns), ``csv`` otherwise;
- a Markdown table with a loss column (3 rows at least, and at least half
  as many as the step-carrying lines beside it): ``markdown``;
- text lines: ``hf`` for a Trainer console log (``{'loss': ...}`` dicts),
  ``text`` for step-carrying lines.

When two of the text readers both find many lines (Trainer dicts and
step lines, say), the file is ambiguous: :func:`sniff` names each
candidate with what it found, and the caller refuses the file rather than
guess.
"""

from __future__ import annotations

import csv as _csv
import re
from dataclasses import dataclass, field
from pathlib import Path

from runlens.io.importers import anyline, embedded
from runlens.io.importers._clean import clean
from runlens.io.importers._evalline import BARE_MIN, KEYED_MIN, NUMBERED_MIN, bare_value, keyed
from runlens.io.importers._lineplan import Parser
from runlens.io.importers._logsignals import Watch, is_part
from runlens.io.importers._splitrecords import join_split
from runlens.io.importers._textfile import text_encoding
from runlens.io.importers._textline import Context, parse_mapping, read_fields
from runlens.io.reader import read_table, shape_of
from runlens.io.reader.names import PERPLEXITY, role_of, tokens
from runlens.io.reader.objective import names_objective
from runlens.io.reader.source import head_bytes, open_binary

HEAD = 262_144
_HF_LINE = re.compile(r"\{'(loss|eval_loss|grad_norm|learning_rate|eval_[\w]+_loss)': '?(?:[-+]?[0-9]|nan|inf)")
_WANDB_COL = re.compile(r"^.+ - .+$")


@dataclass
class Sniff:
    """The importer chosen for a file, or why none was."""

    kind: str | None
    reason: str = ""  # why no kind: empty, binary, ambiguous, nothing recognised
    found: dict[str, str] = field(default_factory=dict)  # candidate kind -> what it found


def _is_tfrecord(head: bytes) -> bool:
    if len(head) < 14:
        return False
    length = int.from_bytes(head[:8], "little")
    return 0 < length < (1 << 24) and head[12] == 0x09


def sniff_file(path: Path) -> Sniff:
    """The importer kind for the file at ``path``, from its content."""
    head = head_bytes(path, HEAD)  # decompressed for a .gz log
    name = path.name.lower()
    if "tfevents" in name or _is_tfrecord(head):
        return Sniff("tensorboard")
    if head[:4] == b"PAR1":
        return Sniff("table")
    if head[:4] == b":W&B" or name.endswith(".wandb"):
        return Sniff("wandb")
    encoding = text_encoding(head)
    text = head.decode(encoding, "replace").lstrip("\ufeff")
    if not text.strip():
        return Sniff(None, "an empty file")
    if "\x00" in text[:8192]:
        return Sniff(None, "a binary file, not a training log")
    lines = text.splitlines()
    if len(head) == HEAD and lines:
        lines = lines[:-1]  # the last line may be cut by the window
    table_note = ""
    if _csv_kind(lines) == "wandb":
        return Sniff("wandb")
    if shape_of(head) is not None:
        found = _structured(path)
        if isinstance(found, Sniff):
            return found
        table_note = found
    counts = _line_counts(lines)
    if not (counts["text"] or counts["hf"] or counts["jsonl"]) and len(head) == HEAD:
        # A long preamble (a config dump, a model summary) can fill the head: look further in.
        lines = _more_lines(path, encoding)
        counts = _line_counts(lines)
    table = _markdown_rows(lines)
    # A table is written on purpose (a header naming its columns); loose step lines beside
    # it (prose that restates a few of its rows) do not outweigh it unless they are twice as many.
    if table >= 3 and 2 * table >= counts["text"] and table >= counts["hf"]:
        return Sniff("markdown", found={"markdown": f"a table of {table} rows", **(
            {"text": f"{counts['text']} lines"} if counts["text"] else {})})
    found = _text_kind(counts, lines)
    if found.kind is None and (joined := _line_counts(join_split(lines[:4000]))) != counts:
        # As the text reader reads a log it finds nothing in otherwise: its two-line records joined.
        if (again := _text_kind(joined, lines)).kind is not None:
            found = again
    if found.kind is None and table_note:
        return Sniff(None, table_note, {"table": table_note})  # a table: --loss COLUMN reads it
    return found


_FURTHER = 8 << 20


def _more_lines(path: Path, encoding: str) -> list[str]:
    """Lines of the first 8 MiB, one in every few when there are many (the counts only need a sample)."""
    with open_binary(path) as f:
        text = f.read(_FURTHER).decode(encoding, "replace")
    lines = text.splitlines()[:-1]
    step = max(1, len(lines) // 4000)
    return lines[::step]


def _structured(path: Path) -> Sniff | str:
    """``Sniff("table")`` for a structured log with a training signal, else why it is not one."""
    from runlens.io.importers.table import signal_roles
    from runlens.io.reader.roles import infer

    table = read_table(path)
    if table is None or table.n == 0:
        return ""
    if signal_roles(infer(table)):
        return Sniff("table", found={"table": f"a {table.shape} table of {table.n} rows"})
    names = ", ".join(table.names[:12]) + (" ..." if len(table.names) > 12 else "")
    named = "".join(f"; --loss {a} names it" for a in table.aliases)  # a download not named by its tag
    return (f"a {table.shape} table of {table.n} rows with no loss, validation loss or gradient norm "
            f"among its columns ({names or 'none'}){named}")


def _markdown_rows(lines: list[str]) -> int:
    """Rows of the largest Markdown table with a loss column in the head (0 when none)."""
    from runlens.io.importers.markdown import pick, tables

    t = pick(tables(lines))
    return len(t.rows) if t is not None else 0


def _line_counts(lines: list[str]) -> dict[str, int]:
    """How many lines each text reader would take (of the head)."""
    ctx, parser = Context(), Parser()  # the text reader's shape cache: a few shapes, parsed once each
    counts = {"jsonl": 0, "hf": 0, "text": 0, "nonblank": 0, "loss_lines": 0, "keyed_lines": 0, "bare_lines": 0,
              "proxy_lines": 0, "nonfinite_said": 0}
    for raw in lines[:4000]:
        s = raw.strip()
        if not s:
            continue
        counts["nonblank"] += 1
        if s.startswith("{") and s.endswith("}") and '"' in s:
            d = parse_mapping(s)
            if d is not None and any(k in d for k in ("step", "iteration", "iter", "global_step", "epoch", "_step")):
                counts["jsonl"] += 1
                continue
        if _HF_LINE.search(s):
            d = parse_mapping(s[s.index("{"):s.rindex("}") + 1]) if "}" in s else None
            if d is None or not any(k in d for k in ("step", "global_step", "iteration", "iter")):
                counts["hf"] += 1  # a Trainer dict: no step in it (a dict with one is a text line)
                continue
        for piece in s.split("\r"):
            hit, fields = parser.parse(piece.strip(), ctx)
            if hit is not None and fields:
                counts["text"] += 1
                break
        else:  # no step: a line the text reader numbers when no line of the log has one
            text = clean(s)
            names = [k for k, _ in read_fields(text)]  # parsed once: a line may hold 100,000 fields
            lossy = [k for k in names if role_of(k) == (False, "loss") or (not role_of(k)[0] and is_part(k))
                     or not PERPLEXITY.isdisjoint(tokens(k))]
            loss = bool(lossy)
            counts["loss_lines"] += loss
            counts["keyed_lines"] += loss and keyed(text, lossy)
            counts["bare_lines"] += bare_value(s, text) is not None
            counts["nonfinite_said"] += "nan" in s.lower() and not loss and Watch().see(s, None, stepless=True)
            # What a loop watches matters only in a log where no line names a loss: counted while none has.
            counts["proxy_lines"] += not loss and not counts["loss_lines"] and any(
                role_of(k) == (True, "loss") or names_objective(k) for k in names)
    return counts


def _csv_kind(lines: list[str]) -> str | None:
    rows = [r for r in lines[:200] if r.strip() and not r.startswith(("<<<<<<<", "=======", ">>>>>>>"))]
    if len(rows) < 2 or "," not in rows[0]:
        return None
    try:
        parsed = list(_csv.reader(rows))
    except _csv.Error:
        return None
    width = len(parsed[0])
    if width < 2 or sum(len(r) == width for r in parsed[1:]) < 0.8 * (len(parsed) - 1):
        return None
    header = [h.strip() for h in parsed[0]]
    if any(_is_number(h) for h in header):
        return None  # a data row, not a header: text with commas
    numeric = any(_is_number(c) for r in parsed[1:6] for c in r)
    if not numeric:
        return None
    cols = {h.lower() for h in header}
    if any(_WANDB_COL.match(h) for h in header) and any(h.endswith(("__MIN", "__MAX")) for h in header) \
            or (header[0] in ("Step", "step", "_step") and sum(" - " in h for h in header) >= 1):
        return "wandb"
    if {"step", "epoch"} <= cols and any(c.startswith(("train", "val", "lr-")) for c in cols):
        return "lightning-csv"
    return "csv"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _text_kind(counts: dict[str, int], lines: list[str]) -> Sniff:
    found = {k: f"{counts[k]} lines" for k in ("hf", "text", "jsonl") if counts[k]}
    ranked = sorted(((counts[k], k) for k in ("hf", "text", "jsonl")), reverse=True)
    (n1, k1), (n2, k2) = ranked[0], ranked[1]
    if n1 == 0 and (counts["loss_lines"] >= NUMBERED_MIN or counts["keyed_lines"] >= KEYED_MIN
                    or (counts["loss_lines"] and counts["nonfinite_said"])):
        return Sniff("text", found={"text": f"{counts['loss_lines']} lines with a training loss and no step"})
    if n1 == 0 and counts["loss_lines"] == 0 and counts["proxy_lines"] >= 3:
        return Sniff("text", found={"text": f"{counts['proxy_lines']} lines with a validation loss, an accuracy, an "
                                            "error rate or a reward and no step"})
    if n1 == 0 and counts["loss_lines"] == 0 and counts["bare_lines"] >= BARE_MIN:
        return Sniff("text", found={"text": f"{counts['bare_lines']} values alone on their lines and no loss named"})
    if n1 == 0 and anyline.finds_loss(lines[:4000]):
        return Sniff("text", found={"text": "lines that name a loss beside a number, in no format runlens knows"})
    if n1 == 0 and embedded.finds(lines[:4000]):
        return Sniff("text", found={"text": "a table of numbers under a line of names, between other lines"})
    if n1 == 0:
        return Sniff(None, "no line carries a training step with a number (not a training log)")
    if n2 >= 3 and n2 * 2 >= n1:
        what = {"hf": "Trainer log dicts", "text": "step-carrying lines", "jsonl": "JSON objects with a step"}
        return Sniff(None, "ambiguous: " + "; ".join(f"{k} would read {found[k]} of {what[k]}" for k in (k1, k2))
                     + "; run `runlens import KIND` with the right kind", found)
    return Sniff(k1, found=found)


def _is_mlflow(p: Path) -> bool:
    """A run folder (``meta.yaml`` + ``metrics/``), an experiment of them, or an ``mlruns`` root."""
    for pattern in ("", "*/", "*/*/"):
        if next(p.glob(pattern + "metrics"), None) is not None and next(p.glob(pattern + "meta.yaml"), None):
            return True
    return False


def sniff_dir(p: Path) -> Sniff:
    """The importer kind for a folder (not a runlens run), from the files it holds."""
    if (p / "run.json").exists():
        return Sniff(None, "a runlens run")
    if _is_mlflow(p):
        return Sniff("mlflow")
    if next(p.glob("*.wandb"), None) is not None or next(p.glob("*/run-*.wandb"), None) is not None:
        return Sniff("wandb")
    if next(p.rglob("*tfevents*"), None) is not None:
        return Sniff("tensorboard")
    from runlens.io.importers.table import folder_table

    if folder_table(p) is not None:
        return Sniff("table")
    return Sniff(None, "no training log found in this folder")


def sniff(path: str | Path) -> Sniff:
    """The importer kind for ``path`` (a file or a folder), or why none reads it."""
    p = Path(path)
    if p.is_file():
        return sniff_file(p)
    if p.is_dir():
        return sniff_dir(p)
    return Sniff(None, "no such file or folder")
