"""Benchmark: runlens's TensorBoard importer against TensorBoard's own ``EventAccumulator``.

    .venv/bin/python benchmarks/tensorboard_import.py [--steps 200000] [--tags 100] [--ea-steps 10000]

The event file (one ``add_scalar``-style event per step and tag, as
``SummaryWriter.add_scalar`` writes them) is generated once and cached
under ``benchmarks/_data/`` (git-ignored). Writing 20 million events with
``SummaryWriter`` costs ~56 us each here (its CRC32C is pure Python), about
19 minutes, so the generator builds the same bytes with numpy: one template
record per tag serialized by TensorBoard's own ``Event`` proto, replicated
with each step's step/time/value, and CRC32C computed column-wise. The
bytes are checked against TensorBoard's reader (which verifies every CRC)
on a small file before anything is timed.

``EventAccumulator`` verifies CRCs in pure Python too; on a loaded machine
it needs far more than 2 minutes for the full file, so it is timed on the
first ``--ea-steps`` steps (a proportional subset, same tags), our importer
on that subset *and* on the full file. Results go to
``benchmarks/results/tensorboard_import.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "benchmarks" / "_data" / "tensorboard_import"
RESULTS = ROOT / "benchmarks" / "results" / "tensorboard_import.md"


def _crc_table() -> np.ndarray:
    poly = 0x82F63B78
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table[i] = c
    return table


TABLE = _crc_table()


def masked_crc32c(rows: np.ndarray) -> np.ndarray:
    """TFRecord's masked CRC32C of every row of a (n, length) uint8 array."""
    crc = np.full(len(rows), 0xFFFFFFFF, dtype=np.uint32)
    for j in range(rows.shape[1]):
        crc = TABLE[(crc ^ rows[:, j]) & 0xFF] ^ (crc >> np.uint32(8))
    crc ^= np.uint32(0xFFFFFFFF)
    return (((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(0xA282EAD8)).astype(np.uint32)


def tag_names(n: int) -> list[str]:
    base = ["train/loss", "val_loss", "lr", "grad_norm", "train/accuracy"]
    return (base + [f"metrics/layer_{i:03d}/{'mean' if i % 2 else 'std_dev'}" for i in range(n)])[:n]


def _records(steps: np.ndarray, tag: str, values: np.ndarray, walls: np.ndarray) -> np.ndarray:
    """Framed records ``(n, record_length)`` of one tag for steps whose varint has one length."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    def event(step: int) -> bytes:
        return event_pb2.Event(wall_time=1.0, step=step, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag=tag, simple_value=1.0)])).SerializeToString()

    template = np.frombuffer(event(int(steps[0])), dtype=np.uint8)
    n, dlen = len(steps), len(template)
    data = np.tile(template, (n, 1))
    data[:, 1:9] = walls.astype("<f8").view(np.uint8).reshape(n, 8)
    if steps[0] > 0:
        width = len(_varint(int(steps[0])))
        s = steps.astype(np.int64)
        for k in range(width):
            byte = (s >> (7 * k)) & 0x7F
            data[:, 10 + k] = byte | (0x80 if k < width - 1 else 0)
    data[:, dlen - 4:] = values.astype("<f4").view(np.uint8).reshape(n, 4)
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as one_crc

    header = np.frombuffer(np.uint64(dlen).tobytes(), dtype=np.uint8)
    head_crc = np.frombuffer(np.uint32(one_crc(header.tobytes())).tobytes(), dtype=np.uint8)
    out = np.empty((n, 12 + dlen + 4), dtype=np.uint8)
    out[:, :8] = header
    out[:, 8:12] = head_crc
    out[:, 12:12 + dlen] = data
    out[:, 12 + dlen:] = masked_crc32c(data).view(np.uint8).reshape(n, 4)
    return out


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def generate(path: Path, steps: int, n_tags: int, seed: int = 0) -> None:
    """Write a ``steps`` x ``n_tags`` scalar event file (file_version event first)."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as one_crc

    rng = np.random.default_rng(seed)
    tags = tag_names(n_tags)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    with open(tmp, "wb") as f:
        first = event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString()
        head = len(first).to_bytes(8, "little")
        f.write(head + one_crc(head).to_bytes(4, "little") + first + one_crc(first).to_bytes(4, "little"))
        bounds = [0, 1, 128, 16384, 1 << 21]
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            for start in range(lo, min(hi, steps), 5000):
                s = np.arange(start, min(start + 5000, hi, steps), dtype=np.int64)
                walls = 1.7e9 + s * 0.05 + rng.random(len(s)) * 1e-3
                blocks = []
                for t, tag in enumerate(tags):
                    if tag == "train/loss":
                        vals = 3.0 * np.exp(-s / 50000) + rng.normal(0, 0.05, len(s))
                    else:
                        vals = rng.random(len(s))
                    blocks.append(_records(s, tag, vals, walls + t * 1e-5))
                f.write(np.concatenate(blocks, axis=1).tobytes())  # step-major, tag-minor
    os.replace(tmp, path)


def check_against_tensorboard(workdir: Path) -> None:
    """The generator's bytes pass TensorBoard's CRC checks and read back the same as ours."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from runlens.io.importers.tensorboard import read

    small = workdir / "check" / "events.out.tfevents.check"
    generate(small, 300, 7, seed=1)
    ea = EventAccumulator(str(small), size_guidance={"scalars": 0})
    ea.Reload()
    ours = read(small)
    for tag in ea.Tags()["scalars"]:
        theirs = np.array([e.value for e in ea.Scalars(tag)])
        role = {"train/loss": "loss", "val_loss": "val_loss", "lr": "lr", "grad_norm": "grad_norm"}.get(tag)
        series = (ours.evals if role == "val_loss" else ours.train)[role or tag.replace("/", "_")]
        assert np.array_equal(series.values, theirs.astype(np.float64)), tag
        assert np.array_equal(series.steps, [e.step for e in ea.Scalars(tag)]), tag


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def ea_load(path: Path) -> int:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    guidance = {"scalars": 0, "histograms": 0, "images": 0, "audio": 0, "compressedHistograms": 0,
                "tensors": 0}
    ea = EventAccumulator(str(path), size_guidance=guidance)
    ea.Reload()
    return sum(len(ea.Scalars(t)) for t in ea.Tags()["scalars"])


def ours_read(path: Path) -> int:
    from runlens.io.importers.tensorboard import read

    imp = read(path)
    return sum(len(s.values) for s in (*imp.train.values(), *imp.evals.values()))


def ours_import(path: Path, out: Path) -> None:
    from runlens.io.importers import import_run

    shutil.rmtree(out, ignore_errors=True)
    import_run("tensorboard", path, out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--tags", type=int, default=100)
    ap.add_argument("--ea-steps", type=int, default=10_000, help="steps of the subset EventAccumulator reads")
    args = ap.parse_args()
    full = DATA / f"tb_{args.steps}x{args.tags}" / "events.out.tfevents.bench"
    subset = DATA / f"tb_{args.ea_steps}x{args.tags}" / "events.out.tfevents.bench"
    with tempfile.TemporaryDirectory() as tmp:
        check_against_tensorboard(Path(tmp))
        for path, steps in ((full, args.steps), (subset, args.ea_steps)):
            if not path.exists():
                print(f"generating {path} ...", flush=True)
                print(f"  {_time(lambda p=path, s=steps: generate(p, s, args.tags)):.1f} s", flush=True)
        mb_full, mb_sub = full.stat().st_size / 1e6, subset.stat().st_size / 1e6
        n_sub = args.ea_steps * args.tags
        t_ea = _time(lambda: ea_load(subset))
        t_sub = _time(lambda: ours_read(subset))
        t_full = _time(lambda: ours_read(full))
        t_full_import = _time(lambda: ours_import(full, Path(tmp) / "run"))
    n_full = args.steps * args.tags
    ea_full_est = t_ea * n_full / n_sub
    report = f"""# TensorBoard import benchmark

`benchmarks/tensorboard_import.py`, run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on
{platform.machine()} with {os.cpu_count()} cores shared with other jobs (numbers are wall clock, one run).

Event file: {args.steps:,} steps x {args.tags} tags = {n_full:,} scalar events (one `add_scalar`-style
event per step and tag), {mb_full:.0f} MB. Subset for EventAccumulator: the first
{args.ea_steps:,} steps, same tags ({n_sub:,} events, {mb_sub:.0f} MB).

| what | events | seconds | events/s |
|---|---:|---:|---:|
| EventAccumulator (`size_guidance` 0 = no limit), subset | {n_sub:,} | {t_ea:.2f} | {n_sub / t_ea:,.0f} |
| runlens `importers.tensorboard.read`, subset | {n_sub:,} | {t_sub:.2f} | {n_sub / t_sub:,.0f} |
| runlens `importers.tensorboard.read`, full file | {n_full:,} | {t_full:.2f} | {n_full / t_full:,.0f} |
| runlens `import_run` (read + write the run directory), full file | {n_full:,} | {t_full_import:.2f} | {n_full / t_full_import:,.0f} |

- Same subset, same run: runlens reads **{t_ea / t_sub:.0f}x** faster than EventAccumulator.
- EventAccumulator on the full file, extrapolated linearly from the subset: ~{ea_full_est:.0f} s;
  runlens reads it in {t_full:.1f} s (**{ea_full_est / t_full:.0f}x**) and imports it, writing the run
  directory, in {t_full_import:.1f} s (**{ea_full_est / t_full_import:.0f}x**).
- Of the import, {t_full_import - t_full:.0f} s is writing: the importer goes through `RunWriter`, one
  `add_scalars` call per step with {args.tags - 1} user columns, and the writer's per-value checks
  dominate. A bulk `RunWriter` method taking whole columns would remove most of it.
- EventAccumulator was not run on the full file: on this shared machine it would need far more than the
  2 minutes the brief allows (extrapolation above). Its cost is linear in events (it streams records and
  verifies each CRC32C in pure Python), so the subset ratio is the fair comparison.
- Every value is kept (no reservoir sampling); NaN stays NaN. runlens does not verify CRCs (TensorBoard
  does, in pure Python, which is most of its time); a truncated last record is reported.
"""
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
