"""Parquet parts whose footer lies about their rows, for the reader ceilings' tests.

pyarrow writes honest footers only, so the lie is patched into the bytes: the file's
``FileMetaData.num_rows`` (Thrift compact field 3, an i64 right after the schema list)
is re-encoded with a smaller number and the footer length fixed. The row groups keep their
true counts, which is what a reader decodes: a loader trusting the file's count alone
would decode every row.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow.parquet as pq

from tests.wire import varint


def _i64_field(n: int) -> bytes:
    # Header 0x16: field id one past the previous field (the schema, 2), type i64 (6); zigzag value.
    return b"\x16" + varint((n << 1) ^ (n >> 63))


def understate_rows(path: Path, claimed: int) -> int:
    """Make the footer of the part at ``path`` claim ``claimed`` rows; returns the true count.

    The true count must be distinctive (its encoding found once in the footer: a row group or a
    column chunk of the same count would be ambiguous), which the assertion checks.
    """
    data = path.read_bytes()
    assert data[-4:] == b"PAR1", f"{path} is not Parquet"
    length = struct.unpack("<I", data[-8:-4])[0]
    footer = data[-8 - length:-8]
    true = pq.ParquetFile(path).metadata.num_rows
    honest = _i64_field(true)
    assert footer.count(honest) == 1, f"{true} is encoded {footer.count(honest)} times in the footer"
    lying = footer.replace(honest, _i64_field(claimed))
    path.write_bytes(data[:-8 - length] + lying + struct.pack("<I", len(lying)) + b"PAR1")
    assert pq.ParquetFile(path).metadata.num_rows == claimed
    return true
