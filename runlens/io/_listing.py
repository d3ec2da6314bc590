"""Listing a table's parts while a writer may be compacting it.

A compaction writes its merged parts, then removes the parts they replace.
A reader's listing can fall between the two; a part that is listed but gone
when it is looked at means the listing is stale, so the caller lists again
(:class:`Vanished`) instead of reading the table short.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from recorders import format as fmt
from runlens.io.runmeta import one_line

# Fresh listings tried when parts vanish under a reader (each vanishing is one finished compaction).
READ_ATTEMPTS = 8


@dataclass(frozen=True)
class Part:
    path: Path
    rank: int
    seq: int


def parts(root: Path, table: str, warnings: list[str], strict: bool = False) -> list[Part]:
    folder = root / table
    if not folder.is_dir():
        return []
    try:
        entries = _stable_listing(folder)
    except OSError as exc:
        warnings.append(f"skipped {table}/: cannot list it ({one_line(exc)})")
        return []
    found = []
    for e in entries:
        parsed = fmt.parse_part_name(e.name)
        if parsed is None:
            continue
        # Regular files only: a FIFO named like a part would block the read forever. A part
        # listed but gone by its stat was compacted away meanwhile and its merged part may not
        # be in this listing: dropping it quietly loses its rows, so the table is listed again.
        try:
            regular = stat.S_ISREG(os.stat(e).st_mode)
        except FileNotFoundError:
            if strict:
                raise Vanished(str(e)) from None
            regular = False
        except (OSError, ValueError):
            regular = False
        if regular:
            found.append(Part(e, *parsed))
    return found


def _stable_listing(folder: Path) -> list[Path]:
    """The folder's entries, listed until two listings in a row agree: a listing taken while a
    compaction renames its merged part in and removes the old ones may miss both (POSIX leaves
    entries added or removed during ``readdir`` unspecified), losing rows silently."""
    entries = sorted(folder.iterdir())
    for _ in range(READ_ATTEMPTS):
        again = sorted(folder.iterdir())
        if again == entries:
            break
        entries = again
    return entries


class Vanished(Exception):
    """A listed part was gone when it was opened: a compaction removed it meanwhile."""
