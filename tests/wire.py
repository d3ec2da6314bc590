"""Bytes of the wire formats the readers parse, for tests that build hostile files by hand."""

from __future__ import annotations


def varint(n: int) -> bytes:
    """An unsigned LEB128 varint: protobuf's and Thrift compact's integer encoding."""
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)
