"""Fast reading of TensorBoard event files: TFRecord framing and scalar events, vectorised.

An event file is a chain of records ``[u64 length][u32 crc][data][u32 crc]``
whose ``data`` is a serialized ``Event``. Reading it record by record in
Python costs microseconds per record, and a 200,000-step run with 100 tags
holds 20 million of them. So the reader works a window of the file at a time
with numpy:

1. *Framing.* Every position that could start a record (length < 16 MiB,
   event starting with the ``wall_time`` field byte ``0x09``) is a
   candidate; false candidates inside data are dropped because no candidate's
   end points at them. The survivors are then *proved* to be the chain: the
   first is the known position and each one's end is the next one's start.
   The proven prefix is taken; the rest of the window is tried again. A
   record the vectorised test cannot frame is framed the plain way.
2. *Decoding.* Records shaped like ``SummaryWriter.add_scalar`` output
   (``wall_time``, ``step``, one ``Summary.Value`` with ``tag`` and
   ``simple_value``, nothing else) are decoded by byte offsets; every
   other record (TF2 tensor summaries, histograms, several values per
   event, ``file_version``) goes to the compiled protobuf parser.

Every framed record's two CRC32Cs (of the length, of the data) are
verified (:mod:`runlens.io.importers._crc32c`: the ``google-crc32c`` C
extension, else a slow pure-Python table); a record that fails is not
decoded, and a warning gives its byte offset, so a corrupt record is never
a silent wrong value. A truncated final record (a run still writing, or
killed) is reported.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from runlens.io.importers._crc32c import masked, masked_rows

_MIN_WINDOW = 1 << 16
_MAX_WINDOW = 1 << 26
_HEADER = 12  # u64 length + u32 length crc


class ScalarChunks:
    """Fast-path scalars, gathered window by window, grouped per tag at the end."""

    def __init__(self) -> None:
        self.tags: list[str] = []
        self._tag_id: dict[bytes, int] = {}
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def tag_id(self, tag: bytes) -> int:
        i = self._tag_id.get(tag)
        if i is None:
            i = self._tag_id[tag] = len(self.tags)
            self.tags.append(tag.decode("utf-8", "replace"))
        return i

    def by_tag(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``tag -> (steps, wall_times, values)`` in file order."""
        if not self.parts:
            return {}
        ids, steps, walls, values = (np.concatenate(c) for c in zip(*self.parts, strict=True))
        order = np.argsort(ids, kind="stable")
        bounds = np.searchsorted(ids[order], np.arange(len(self.tags) + 1))
        out = {}
        for i, tag in enumerate(self.tags):
            sel = order[bounds[i]:bounds[i + 1]]
            if len(sel):
                out[tag] = (steps[sel], walls[sel], values[sel].astype(np.float64))
        return out


def _gather(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """``(n, width)`` bytes starting at each of ``pos``: row copies from a strided view, no index matrix."""
    rows = np.lib.stride_tricks.sliding_window_view(buf, width)
    return rows[np.minimum(pos, len(rows) - 1)]


def _varint(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values and byte lengths of the varints at ``pos``; length 0 marks one too long to be ours.

    Nearly every varint here (lengths, most steps) is one byte, so later
    bytes are read only for the positions that continue.
    """
    last = len(buf) - 1
    b = buf[np.minimum(pos, last)].astype(np.int64)
    value = b & 0x7F
    length = np.ones(len(pos), dtype=np.int64)
    idx = np.flatnonzero(b >= 0x80)
    k = 1
    while len(idx) and k < 9:
        b = buf[np.minimum(pos[idx] + k, last)].astype(np.int64)
        value[idx] |= (b & 0x7F) << (7 * k)
        length[idx] += 1
        idx = idx[b >= 0x80]
        k += 1
    length[idx] = 0
    return value, length


def _frame_window(buf: np.ndarray, pos: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """Proven record starts and lengths from ``pos`` within ``[pos, end)``; empty if ``pos`` is not a candidate."""
    size = len(buf)
    stop = min(end, size - _HEADER - 1)
    if stop <= pos:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    cand = np.flatnonzero(buf[pos + _HEADER:stop + _HEADER] == 0x09).astype(np.int64) + pos
    hi = _gather(buf, cand + 3, 5)
    cand = cand[~hi.any(axis=1)]
    if len(cand) == 0 or cand[0] != pos:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    lengths = _gather(buf, cand, 3).astype(np.int64)
    lengths = lengths[:, 0] | (lengths[:, 1] << 8) | (lengths[:, 2] << 16)
    nxt = cand + _HEADER + lengths + 4
    pointed = np.zeros(len(cand), dtype=bool)
    j = np.searchsorted(cand, nxt)
    hit = j < len(cand)
    hit[hit] = cand[j[hit]] == nxt[hit]
    pointed[j[hit]] = True
    pointed[0] = True
    cand, lengths, nxt = cand[pointed], lengths[pointed], nxt[pointed]
    chained = nxt[:-1] == cand[1:]
    broken = np.flatnonzero(~chained)
    k = len(cand) if len(broken) == 0 else broken[0] + 1
    cand, lengths, nxt = cand[:k], lengths[:k], nxt[:k]
    whole = nxt <= size
    return cand[whole], lengths[whole]


def _decode_scalars(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, out: ScalarChunks) -> np.ndarray:
    """Decode the ``add_scalar``-shaped records; the indices of the others."""
    d0 = starts + _HEADER
    dend = d0 + lengths
    p = d0 + 9
    has_step = buf[np.minimum(p, len(buf) - 1)] == 0x10
    step, sl = _varint(buf, p + 1)
    step = np.where(has_step, step, 0)
    p = np.where(has_step, p + 1 + sl, p)
    ok = (sl > 0) | ~has_step
    ok &= buf[np.minimum(p, len(buf) - 1)] == 0x2A
    slen, l1 = _varint(buf, p + 1)
    p2 = p + 1 + l1
    ok &= (l1 > 0) & (p2 + slen == dend) & (buf[np.minimum(p2, len(buf) - 1)] == 0x0A)
    vlen, l2 = _varint(buf, p2 + 1)
    p3 = p2 + 1 + l2
    ok &= (l2 > 0) & (p3 + vlen == dend) & (buf[np.minimum(p3, len(buf) - 1)] == 0x0A)
    tlen, l3 = _varint(buf, p3 + 1)
    p4 = p3 + 1 + l3
    p5 = p4 + tlen
    ok &= (l3 > 0) & (p5 + 5 == dend) & (buf[np.minimum(p5, len(buf) - 1)] == 0x15)
    fast = np.flatnonzero(ok)
    if len(fast):
        walls = _gather(buf, d0[fast] + 1, 8).copy().view("<f8").ravel()
        values = _gather(buf, p5[fast] + 1, 4).copy().view("<f4").ravel()
        ids = np.empty(len(fast), dtype=np.int32)  # int16 overflowed past 32,767 tags (exit 3)
        tl = tlen[fast]
        for width in np.unique(tl):  # tags of one length at a time: fixed-size binary, hashed in C
            sel = np.flatnonzero(tl == width)
            rows = np.ascontiguousarray(_gather(buf, p4[fast[sel]], int(width)))
            tags = pa.FixedSizeBinaryArray.from_buffers(pa.binary(int(width)), len(sel),
                                                        [None, pa.py_buffer(rows)])
            enc = pc.dictionary_encode(tags)
            remap = np.array([out.tag_id(t.as_py()) for t in enc.dictionary], dtype=np.int32)
            ids[sel] = remap[enc.indices.to_numpy(zero_copy_only=False)]
        out.parts.append((ids, step[fast], walls, values))
    return np.flatnonzero(~ok)


def _crc_ok(buf: np.ndarray, start: int, length: int) -> bool:
    """Whether the record at ``start`` carries the right CRCs for its length and its data."""
    mv = buf.data
    d0 = start + _HEADER
    (len_crc,) = struct.unpack_from("<I", mv, start + 8)
    (data_crc,) = struct.unpack_from("<I", mv, d0 + length)
    return masked(mv[start:start + 8]) == len_crc and masked(mv[d0:d0 + length]) == data_crc


_VECTOR_MAX_LEN = 512  # longer records (histograms) are checked one C call each
_VECTOR_MIN_COUNT = 16


def _u32(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return _gather(buf, pos, 4).copy().view("<u4").ravel()


def _crc_mask(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Whether each record's length CRC and data CRC hold; records of one short length at a time in numpy."""
    ok = masked_rows(_gather(buf, starts, 8)) == _u32(buf, starts + 8)
    d0 = starts + _HEADER
    stored = _u32(buf, d0 + lengths)
    uniq, counts = np.unique(lengths, return_counts=True)
    for n, count in zip(uniq.tolist(), counts.tolist(), strict=True):
        sel = np.flatnonzero(lengths == n)
        if n <= _VECTOR_MAX_LEN and count >= _VECTOR_MIN_COUNT:
            rows = _gather(buf, d0[sel], n) if n else np.zeros((len(sel), 0), np.uint8)
            ok[sel] &= masked_rows(rows) == stored[sel]
        else:
            mv = buf.data
            ok[sel] &= np.fromiter((masked(mv[a:a + n]) for a in d0[sel].tolist()), dtype=np.uint32,
                                   count=len(sel)) == stored[sel]
    return ok


def _verified(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, path: Path, notes: list[str],
              bad: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The records whose CRCs hold; the offsets of the others go to ``bad`` (and, the first few, ``notes``)."""
    ok = _crc_mask(buf, starts, lengths)
    if ok.all():
        return starts, lengths
    for s in starts[~ok].tolist():
        bad.append(s)
        if len(bad) <= 5:
            notes.append(f"{path.name}: record at byte offset {s} fails its CRC32C check (corrupt): skipped")
    return starts[ok], lengths[ok]


def read_events(path: Path, on_other: Callable[[bytes], None]) -> tuple[ScalarChunks, list[str]]:
    """Stream ``path``: fast-path scalars into the result, every other event's bytes to ``on_other``."""
    out, notes = ScalarChunks(), list[str]()
    if path.stat().st_size == 0:
        return out, [f"{path.name}: empty event file"]
    with open(path, "rb") as f:
        # Mapped, not read: pages come in as the windows reach them.
        buf = np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), dtype=np.uint8)
    size, pos, window, bad = len(buf), 0, _MIN_WINDOW, list[int]()
    while pos < size:
        starts, lengths = _frame_window(buf, pos, pos + window)
        if len(starts):
            pos = int(starts[-1] + _HEADER + lengths[-1] + 4)
            starts, lengths = _verified(buf, starts, lengths, path, notes, bad)
            for i in _decode_scalars(buf, starts, lengths, out):
                s = int(starts[i]) + _HEADER
                on_other(buf[s:s + int(lengths[i])].tobytes())
            window = min(window * 2, _MAX_WINDOW)
            continue
        window = _MIN_WINDOW
        if pos + _HEADER > size:
            notes.append(f"{path.name}: {size - pos} trailing bytes that are not a whole record: ignored")
            break
        (length,) = struct.unpack_from("<Q", buf.data, pos)
        if pos + _HEADER + length + 4 > size:
            notes.append(f"{path.name}: the last record is truncated (the run was still writing, "
                         "or was killed): ignored")
            break
        if _crc_ok(buf, pos, length):
            on_other(buf[pos + _HEADER:pos + _HEADER + length].tobytes())
        else:
            bad.append(pos)
            notes.append(f"{path.name}: record at byte offset {pos} fails its CRC32C check (corrupt): skipped")
            if length >= (1 << 24):
                notes.append(f"{path.name}: the corrupt length at byte offset {pos} leaves the rest unframed: "
                             "stopped reading")
                break
        pos += _HEADER + length + 4
    if len(bad) > 5:
        notes.append(f"{path.name}: {len(bad)} records in all fail their CRC32C check: skipped")
    return out, notes
