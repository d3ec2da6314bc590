"""A TensorBoard event field whose wire type contradicts its schema is a corrupt event (ProtoError,
which the importer counts and skips), not a TypeError from deep inside the decoder."""

from __future__ import annotations

import struct

import pytest

from runlens.io.importers._eventproto import ProtoError, parse_event
from tests.wire import varint


def _field(number: int, wire: int, payload: bytes) -> bytes:
    key = varint(number << 3 | wire)
    return key + (varint(len(payload)) + payload if wire == 2 else payload)


def _event_with_tensor(tensor: bytes) -> bytes:
    value = _field(1, 2, b"loss") + _field(8, 2, tensor)
    summary = _field(1, 2, value)
    return _field(2, 0, varint(7)) + _field(5, 2, summary)


def test_an_int_val_sent_as_a_varint_is_read():
    ev = parse_event(_event_with_tensor(_field(1, 0, varint(3)) + _field(7, 0, varint(42))))
    assert ev.step == 7
    assert ev.values[0].tag == "loss"
    assert ev.values[0].tensor.int_val == [42]


def test_an_int_val_sent_as_fixed32_is_a_corrupt_event():
    with pytest.raises(ProtoError):
        parse_event(_event_with_tensor(_field(1, 0, varint(3)) + _field(7, 5, struct.pack("<i", 42))))


def test_a_float_val_packed_and_fixed_width_both_read():
    packed = _field(5, 2, struct.pack("<2f", 1.5, 2.5))
    single = _field(5, 5, struct.pack("<f", 4.0))
    ev = parse_event(_event_with_tensor(_field(1, 0, varint(1)) + packed + single))
    assert ev.values[0].tensor.float_val == [1.5, 2.5, 4.0]
