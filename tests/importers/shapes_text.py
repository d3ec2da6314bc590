"""Console lines in the punctuation trainers use, and log folders, written by the tests.

Each dialect writes N lines whose loss turns NaN at ``NAN_AT``; the step each line names is
returned so a test can check the analysis against the file.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

from logmaker import NAN_AT, N, falling, overfit_val

from tests.wire import varint


def _loss(i: int, nan: str = "nan") -> str:
    return nan if i >= NAN_AT else f"{falling(i):.4f}"


DIALECTS = {
    # name: (line for step s at row i, step of row i)
    "colon": (lambda i, s: f"epoch: 1, step: {s}, loss: {_loss(i)}, lr: 0.001", lambda i: 10 * i),
    "equals": (lambda i, s: f"step={s} loss={_loss(i)} lr=1e-3", lambda i: 10 * i),
    # A bare "nan" followed by another word is read as part of a name ("number of nan iterations"), so
    # in this dialect the loss comes last on the line.
    "space": (lambda i, s: f"step {s} lr 0.001 loss {_loss(i)}", lambda i: 10 * i),
    "pipes": (lambda i, s: f"| step {s} | loss {_loss(i)} | lr 0.001 |", lambda i: 10 * i),
    "avg": (lambda i, s: f"step {s} loss {_loss(i)} ({_loss(i)}) lr 0.001", lambda i: 10 * i),
    "bracket": (lambda i, s: f"[{s}/{10 * N}] loss: {_loss(i)}", lambda i: 10 * (i + 1)),
    "timestamp_logger": (lambda i, s: f"2024-03-01 10:00:{i % 60:02d},123 - INFO - trainer - step {s} "
                                      f"loss {_loss(i)}", lambda i: 10 * i),
    "ansi_cr_bar": (lambda i, s: f"\r 50%|#####     | {s}/{10 * N}\r\x1b[32mstep {s}\x1b[0m loss {_loss(i)}",
                    lambda i: 10 * i),
    "opennmt_xent": (lambda i, s: f"[2024-01-01 10:00:00,000 INFO] Step {s}/{10 * N}; acc: 10.5; "
                                  f"ppl: {math.exp(min(falling(i), 50)):.2f}; xent: {_loss(i)}; lr: 1.0",
                     lambda i: 10 * (i + 1)),
    "paddle_nanxxx": (lambda i, s: f"[2022/12/12 13:25:40] root INFO: epoch: [1/500], iter: {s}, lr: 0.001000, "
                                   f"loss: {_loss(i, 'nanxxx')}, acc: 0.1", lambda i: 10 * (i + 1)),
}


def dialect(folder: Path, name: str) -> tuple[Path, list[int]]:
    line, step_of = DIALECTS[name]
    steps = [step_of(i) for i in range(N)]
    path = folder / f"{name}.log"
    path.write_text("starting training\n" + "\n".join(line(i, s) for i, s in enumerate(steps)) + "\n")
    return path, steps


def skipped_nan_warning(folder: Path) -> Path:
    """A log whose every logged loss is finite, but which says a NaN loss was skipped."""
    lines = [f"step {s} loss {falling(s):.4f}" for s in range(N)]
    lines.insert(60, "WARNING: NaN or Inf found in loss at this batch, skipping the update")
    path = folder / "skip.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def dvclive(folder: Path) -> Path:
    root = folder / "dvclive"
    for part, values in (("train", [falling(2 * i) for i in range(60)]),
                         ("eval", [overfit_val(2 * i) for i in range(60)])):
        d = root / "plots" / "metrics" / part
        d.mkdir(parents=True)
        (d / "loss.tsv").write_text("step\tloss\n" + "\n".join(f"{i}\t{v}" for i, v in enumerate(values)) + "\n")
    (root / "metrics.json").write_text(json.dumps({"train": {"loss": 0.3}, "step": 59}))
    return root


def lightning_versions(folder: Path) -> Path:
    root = folder / "lightning_logs"
    for v, nan in ((0, False), (1, True)):
        d = root / f"version_{v}"
        d.mkdir(parents=True)
        rows = ["epoch,step,train_loss,val_loss"]
        for i in range(N):
            rows.append(f"{i // 10},{10 * i + 9},{math.nan if nan and i >= NAN_AT else falling(i)},")
        (d / "metrics.csv").write_text("\n".join(rows) + "\n")
    return root


def output_folder(folder: Path) -> Path:
    root = folder / "lr_sweep_1"
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"lr": 0.04, "batch_size": 32}))
    (root / "notes.txt").write_text("tried a higher learning rate\n")
    (root / "metrics.jsonl").write_text("\n".join(
        json.dumps({"step": 10 * i, "train_loss": math.nan if i >= NAN_AT else falling(i)}) for i in range(N)))
    return root


def _record(data: bytes) -> bytes:
    from runlens.io.importers._crc32c import crc32c

    def masked(b: bytes) -> bytes:
        c = crc32c(b)
        return struct.pack("<I", (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF)

    head = struct.pack("<Q", len(data))
    return head + masked(head) + data + masked(data)


def _pb(field: int, wire: int, payload: bytes) -> bytes:
    key = varint(field << 3 | wire)
    return key + (varint(len(payload)) + payload if wire == 2 else payload)


def keras_tensor_events(folder: Path) -> tuple[Path, list[int]]:
    """A Keras run folder: ``train/`` and ``validation/`` event files whose scalars are 0-d float tensors."""
    root = folder / "keras_run"
    epochs = list(range(40))
    for sub, tag, values in (("train", "epoch_loss", [falling(3 * e) for e in epochs]),
                             ("validation", "epoch_loss", [overfit_val(3 * e) for e in epochs])):
        (root / sub).mkdir(parents=True)
        out = _record(_pb(1, 1, struct.pack("<d", 1.0)) + _pb(3, 2, b"brain.Event:2"))
        for e, v in zip(epochs, values, strict=True):
            tensor = _pb(1, 0, b"\x01") + _pb(2, 2, b"") + _pb(5, 2, struct.pack("<f", v))
            meta = _pb(1, 2, _pb(1, 2, b"scalars"))
            value = _pb(1, 2, tag.encode()) + _pb(8, 2, tensor) + _pb(9, 2, meta)
            event = _pb(1, 1, struct.pack("<d", 1000.0 + e)) + _pb(2, 0, bytes([e])) + _pb(5, 2, _pb(1, 2, value))
            out += _record(event)
        (root / sub / "events.out.tfevents.1.host.v2").write_bytes(out)
    return root, epochs
