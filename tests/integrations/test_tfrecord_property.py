"""Property: the vectorised event-file reader sees exactly the scalars a record-by-record reader sees,
whatever mix of events TensorBoard's own writer put in the file."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("tensorboard")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: E402

from runlens.io.importers._tfrecord import read_events  # noqa: E402

tags = st.text(min_size=0, max_size=40)
floats = st.floats(width=32, allow_nan=True, allow_infinity=True)
scalar = st.tuples(st.just("scalar"), tags, floats)
multi = st.tuples(st.just("multi"), st.lists(st.tuples(tags, floats), min_size=2, max_size=4))
histo = st.tuples(st.just("histo"), tags, st.integers(1, 30_000))
events = st.lists(st.tuples(st.integers(-5, 2**45), st.floats(0, 2e9), st.one_of(scalar, scalar, multi, histo)),
                  min_size=0, max_size=60)


def build(step: int, wall: float, spec) -> event_pb2.Event:
    kind = spec[0]
    if kind == "scalar":
        values = [summary_pb2.Summary.Value(tag=spec[1], simple_value=spec[2])]
    elif kind == "multi":
        values = [summary_pb2.Summary.Value(tag=t, simple_value=v) for t, v in spec[1]]
    else:
        h = summary_pb2.HistogramProto(num=spec[2], sum_squares=float(spec[2]),
                                       bucket=[1.0] * spec[2], bucket_limit=[0.5] * spec[2])
        values = [summary_pb2.Summary.Value(tag=spec[1], histo=h)]
    return event_pb2.Event(step=step, wall_time=wall, summary=summary_pb2.Summary(value=values))


def key(tag: str, step: int, value: float) -> tuple:
    return (tag, step, "nan" if math.isnan(value) else value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events)
def test_fast_reader_equals_plain_reader(tmp_path_factory, evs):
    folder = tmp_path_factory.mktemp("tb")
    writer = EventFileWriter(str(folder))
    built = [build(*e) for e in evs]
    for ev in built:
        writer.add_event(ev)
    writer.close()
    path = next(folder.iterdir())
    expected = [key(v.tag, ev.step, v.simple_value) for ev in built for v in ev.summary.value
                if v.HasField("simple_value")]
    others: list[bytes] = []
    fast, notes = read_events(path, others.append)
    got = [key(tag, int(s), float(v)) for tag, (steps, _, vals) in fast.by_tag().items()
           for s, v in zip(steps, vals, strict=True)]
    for data in others:
        ev = event_pb2.Event.FromString(data)
        got += [key(v.tag, ev.step, v.simple_value) for v in ev.summary.value if v.HasField("simple_value")]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert not notes
