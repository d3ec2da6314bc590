"""One process's series in a log that several processes wrote, each line tagged with its rank.

A distributed launcher that tags what each process prints (OpenMPI's ``--tag-output``:
``[1,0]<stderr>:``, horovodrun's ``[0]<stdout>:``, torchrun's ``[rank0]:`` and torchelastic's
``[default0]:``) interleaves the ranks' lines: read as one series, two ranks' losses make a sawtooth
that is neither's (a rank at 8e6 beside one at 80 reads as a loss jumping five orders of magnitude
every line). So the rank that printed the most tagged lines so far is kept (the lowest on a tie: rank
0 is the one trainers log from; Megatron logs from its last pipeline stage alone), and another rank's
line is left out only where it repeats the shape of a kept line (the same text once its numbers are
taken out): a crash another rank printed is still read. Tags are taken off; untagged lines (the
launcher's own) pass as they are.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator

_TAG = re.compile(r"^\s*\[(?:\d+,(\d+)|(\d+)|rank(\d+)|default(\d+))\](<std(?:out|err)>)?:[ \t]?")
_NUMBER = re.compile(r"[-+]?(?:\d[\d.]*(?:[eE][-+]?\d+)?|nan|inf)", re.IGNORECASE)


def _rank(line: str) -> tuple[int, int] | None:
    """``(rank, end of the tag)`` of a tagged line. A bracketed number or pair is a tag only with its
    stream after it, as OpenMPI and horovodrun print it: ``[3]:`` or ``[1,2000]:`` may be a list index
    or an epoch and batch a loop printed."""
    m = _TAG.match(line)
    if m is None or (m.group(3) is None and m.group(4) is None and m.group(5) is None):
        return None
    return int(next(g for g in m.groups()[:4] if g is not None)), m.end()


def _shape(text: str) -> str:
    return _NUMBER.sub("#", text).strip()


def one_rank(chunks: Iterable[list[str]]) -> Iterator[list[str]]:
    """``chunks`` of lines (:func:`runlens.io.importers._textblock.blocks`), the tags taken off and the
    lines of every rank but the kept one left out where they repeat a kept line's shape. A log with no
    tagged line passes unchanged, at the cost of one look at each line's first character."""
    counts: Counter[int] = Counter()
    shapes: set[str] = set()
    for lines in chunks:
        tags = [_rank(ln) if ln[:1] in "[ \t" else None for ln in lines]
        counts.update(t[0] for t in tags if t is not None)
        if not counts:
            yield lines
            continue
        keep = min(counts, key=lambda r: (-counts[r], r))
        shapes.update(_shape(ln[t[1]:]) for ln, t in zip(lines, tags, strict=True) if t is not None and t[0] == keep)
        yield [ln if t is None else ln[t[1]:] for ln, t in zip(lines, tags, strict=True)
               if t is None or t[0] == keep or _shape(ln[t[1]:]) not in shapes]
