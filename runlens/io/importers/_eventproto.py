"""The few TensorBoard ``Event`` messages a run log needs, decoded from the protobuf wire format
without the ``tensorboard`` package: TF2/Keras tensor summaries, histograms, simple values.

The wire format is small and stable: each field is a varint key (field
number << 3 | wire type) followed by a varint, 8 bytes, a length-prefixed
payload or 4 bytes. Only the fields below are read (everything else is
skipped by its wire type), into objects that answer the same attribute
names as the compiled protos (``ev.summary.value[i].tensor.float_val``).

    Event:        1 wall_time (double), 2 step (int64), 5 summary
    Summary:      1 value (repeated)
    Value:        1 tag, 2 simple_value (float), 5 histo, 8 tensor, 9 metadata
    Histogram:    1 min, 2 max, 3 num, 4 sum, 5 sum_squares (doubles)
    TensorProto:  1 dtype, 2 tensor_shape (2 dim), 4 tensor_content,
                  5 float_val, 6 double_val, 7 int_val, 10 int64_val, 13 half_val (packed)
    Metadata:     1 plugin_data (1 plugin_name)
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np


class ProtoError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ProtoError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """``(field number, wire type, value)`` of each field: an int for varints, bytes otherwise."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ProtoError(f"wire type {wire}")
        if pos > len(buf):
            raise ProtoError("truncated field")
        yield number, wire, value


def _int(value: int | bytes) -> int:
    """A varint field's value (its wire type said so; a field of another wire type is refused)."""
    if isinstance(value, bytes):
        raise ProtoError("a varint field holds bytes")
    return value


def _bytes(value: int | bytes) -> bytes:
    """A length-delimited or fixed-width field's bytes."""
    if isinstance(value, int):
        raise ProtoError("a bytes field holds a varint")
    return value


def _double(b: bytes) -> float:
    return struct.unpack("<d", b)[0]


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _packed(value: int | bytes, wire: int, kind: str) -> list[float] | list[int]:
    """Values of a repeated numeric field, packed (wire 2) or one at a time."""
    if kind in ("f", "d"):
        if wire == 2:
            return np.frombuffer(_bytes(value), dtype="<f4" if kind == "f" else "<f8").tolist()
        return [struct.unpack("<f" if kind == "f" else "<d", _bytes(value))[0]]
    if wire == 2:
        packed, out, pos = _bytes(value), [], 0
        while pos < len(packed):
            v, pos = _varint(packed, pos)
            out.append(_signed(v))
        return out
    return [_signed(_int(value))]


_REPEATED = {5: ("float_val", "f"), 6: ("double_val", "d"), 7: ("int_val", "i"), 10: ("int64_val", "i"),
             13: ("half_val", "i")}


def _tensor(buf: bytes) -> SimpleNamespace:
    t = SimpleNamespace(dtype=0, tensor_shape=SimpleNamespace(dim=[]), tensor_content=b"",
                        **{name: [] for name, _ in _REPEATED.values()})
    for number, wire, value in fields(buf):
        if number == 1 and wire == 0:
            t.dtype = _int(value)
        elif number == 2 and wire == 2:
            t.tensor_shape.dim = [d for n, w, d in fields(_bytes(value)) if n == 2]
        elif number == 4 and wire == 2:
            t.tensor_content = _bytes(value)
        elif number in _REPEATED:
            name, kind = _REPEATED[number]
            getattr(t, name).extend(_packed(value, wire, kind))
    if t.dtype == 19 and t.half_val:  # half floats travel as their 16 bits in int32s
        t.half_val = np.array(t.half_val, dtype=np.uint16).view(np.float16).astype(float).tolist()
    return t


def _histo(buf: bytes) -> SimpleNamespace:
    h = SimpleNamespace(min=0.0, max=0.0, num=0.0, sum=0.0, sum_squares=0.0)
    names = {1: "min", 2: "max", 3: "num", 4: "sum", 5: "sum_squares"}
    for number, wire, value in fields(buf):
        if number in names and wire == 1:
            setattr(h, names[number], _double(_bytes(value)))
    return h


def _plugin(buf: bytes) -> str:
    for number, wire, value in fields(buf):
        if number == 1 and wire == 2:
            for n, w, v in fields(_bytes(value)):
                if n == 1 and w == 2:
                    return _bytes(v).decode("utf-8", "replace")
    return ""


def _value(buf: bytes) -> SimpleNamespace:
    v = SimpleNamespace(tag="", kind=None, simple_value=None, histo=None, tensor=None, plugin="")
    for number, wire, value in fields(buf):
        if number == 1 and wire == 2:
            v.tag = _bytes(value).decode("utf-8", "replace")
        elif number == 2 and wire == 5:
            v.kind, v.simple_value = "simple_value", struct.unpack("<f", _bytes(value))[0]
        elif number == 5 and wire == 2:
            v.kind, v.histo = "histo", _histo(_bytes(value))
        elif number == 8 and wire == 2:
            v.kind, v.tensor = "tensor", _tensor(_bytes(value))
        elif number == 9 and wire == 2:
            v.plugin = _plugin(_bytes(value))
        elif number in (3, 4, 6) and wire == 2:
            v.kind = {3: "obsolete_old_style_histogram", 4: "image", 6: "audio"}[number]
    return v


def parse_event(data: bytes) -> SimpleNamespace:
    """An ``Event``: ``wall_time``, ``step`` and ``values`` (None for an event without a summary)."""
    ev = SimpleNamespace(wall_time=0.0, step=0, values=None)
    for number, wire, value in fields(data):
        if number == 1 and wire == 1:
            ev.wall_time = _double(_bytes(value))
        elif number == 2 and wire == 0:
            ev.step = _signed(_int(value))
        elif number == 5 and wire == 2:
            ev.values = [_value(_bytes(v)) for n, w, v in fields(_bytes(value)) if n == 1 and w == 2]
    return ev
