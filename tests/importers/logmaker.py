"""Small training logs in the formats users bring, written by the tests (never copies of others' logs).

Each maker writes a file (or folder) under ``folder`` and returns its path.
The curves are built so that one thing goes wrong in a known way: a NaN
from a known step, an overfitting validation curve, or a gradient spike.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

N = 120  # steps per made-up run: enough for the curve classifier
NAN_AT = 90


def write_lines(folder: Path, lines: list[str], name: str = "train.log") -> str:
    """``lines`` written as the file ``name`` under ``folder``, one per line: a pasted log."""
    path = Path(folder) / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def falling(i: int) -> float:
    return 2.5 * math.exp(-i / 30) + 0.3 + 0.01 * ((i * 7919) % 13 - 6) / 6


def overfit_val(i: int) -> float:
    """Validation loss: falls to a minimum around 40% of the run, then rises steadily."""
    x = i / N
    return 1.0 + 2.0 * (x - 0.4) ** 2 + (0.6 * (x - 0.4) if x > 0.4 else 0.0)


def nanogpt(folder: Path, *, crlf: bool = False, quoted: bool = False) -> Path:
    lines = []
    for i in range(N):
        loss = "nan" if i >= NAN_AT else f"{falling(i):.4f}"
        lines.append(f"2024-01-02 10:{i // 60:02d}:{i % 60:02d} iter {i}: loss {loss}, time 101.5ms, mfu 12.30%")
        if i % 40 == 0:
            lines.append(f"step {i}: train loss {falling(i):.4f}, val loss {falling(i) + 0.05:.4f}")
        lines.append("")
    if quoted:
        lines = ["> " + x for x in lines]
    path = folder / "train.log"
    path.write_bytes(("\r\n" if crlf else "\n").join(lines).encode())
    return path


def keras_console(folder: Path, epochs: int = 30, *, runs: int = 1) -> Path:
    out = ["Using TensorFlow backend.", "Train on 1000 samples, validate on 200 samples"]
    for r in range(runs):
        for e in range(1, epochs + 1):
            out.append(f"Epoch {e}/{epochs}")
            for b in (256, 512, 768):
                out.append(f" {b}/1000 [=====>.......] - ETA: 2s - loss: {falling(e * 4) + r:.4f} - accuracy: 0.5")
            out.append(f"1000/1000 [==============================] - 3s 3ms/step - loss: {falling(e * 4) + r:.4f}"
                       f" - accuracy: 0.8 - val_loss: {overfit_val(e * N // epochs):.4f} - val_accuracy: 0.7")
    path = folder / "nohup.out"
    path.write_text("\n".join(out) + "\n")
    return path


def mmengine(folder: Path, spike_at: int = 70) -> Path:
    out = []
    for i in range(1, N + 1):
        gn = 1.0 + 0.05 * (i % 5)
        loss = falling(i) * (40 if i == spike_at else 1)
        out.append(f"01/02 10:00:{i % 60:02d} - mmengine - INFO - Epoch(train) [1][{i * 10}/{N * 10}]  "
                   f"lr: 1.0000e-04  eta: 2:46:39  time: 2.8906  data_time: 0.0042  memory: 10762  "
                   f"loss: {loss:.4f}  grad_norm: {gn:.4f}")
    path = folder / "20240102.log"
    path.write_text("\n".join(out) + "\n")
    return path


def megatron_no_loss(folder: Path) -> Path:
    out = [f" iteration {5000 + i:8d}/  250000 | consumed samples: {8 * i:10d} | elapsed time per iteration "
           f"(ms): 4247.9 | learning rate: 2.999E-04 | global batch size:     8 | loss scale: 1.0 | "
           f"grad norm: nan | number of skipped iterations:   0 | number of nan iterations:   0 |" for i in range(40)]
    path = folder / "megatron.txt"
    path.write_text("\n".join(out) + "\n")
    return path


def misc_dialects(folder: Path) -> dict[str, Path]:
    """One short log per remaining dialect, each with a NaN at a known step."""
    def series(fmt, n=40, nan_at=30):
        return "\n".join(fmt(i, "nan" if i >= nan_at else f"{falling(i):.4f}") for i in range(n)) + "\n"
    made = {
        "mlx": series(lambda i, v: f"Iter {i * 10}: Train loss {v}, Learning Rate 1.000e-05, It/sec 34.6, "
                                   f"Tokens/sec 2843.9, Trained Tokens {i * 80}, Peak mem 0.988 GB"),
        "caffe": series(lambda i, v: f"I0815 18:59:11.323932 52129 solver.cpp:232] Iteration {i * 20}, loss = {v}\n"
                                     f"I0815 18:59:11.324184 52129 solver.cpp:631] Iteration {i * 20}, lr = 0.001"),
        "bigdl": series(lambda i, v: f"2017-08-20 16:11:38 INFO  DistriOptimizer$:295 - [Epoch 64 {i * 1792}/1281167]"
                                     f"[Iteration {45000 + i}][Wall Clock 197331.8s] Train 1792 in 4.38seconds. "
                                     f"Throughput is 408.4 records/second. Loss is {v if v != 'nan' else 'Infinity'}. "
                                     "Current learning rate is 0.0462"),
        "plain": series(lambda i, v: f"epoch: {i} loss: {v}"),
        "pipes": series(lambda i, v: f"| step {i:5d} | loss {v} | lr 6.0e-04 | grad norm 0.41 |"),
        "equals": series(lambda i, v: f"[rank0] global_step={i} loss={v} lr=0.0006 grad_norm=0.4"),
        "bracket": series(lambda i, v: f"Epoch 1: [{i + 1}/40] loss={v} acc=0.5"),
        "jsonline": series(lambda i, v: json.dumps({"step": i, "loss": float(v), "lr": 1e-3}).replace("NaN", "NaN")
                           + "  <- logged"),
        "dictrepr": series(lambda i, v: f"INFO:root:{{'step': {i}, 'loss': {v}, 'grad_norm': 1.5}}"),
        "tqdm": series(lambda i, v: f"\r 10%|#    | {i}/40 [00:01<00:09] \r\x1b[32m[{i + 1}/40]\x1b[0m loss: {v}"),
    }
    out = {}
    for name, text in made.items():
        out[name] = folder / f"{name}.log"
        out[name].write_text(text)
    return out


def detectron2(folder: Path) -> Path:
    lines = [json.dumps({"data_time": 0.01, "iteration": i * 20 + 19, "loss_cls": 0.5,
                         "total_loss": math.nan if i >= NAN_AT else falling(i), "lr": 1e-4 * (i + 1)})
             for i in range(N)]
    (folder / "output").mkdir(exist_ok=True)
    path = folder / "output" / "metrics.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def mmdet_json(folder: Path) -> Path:
    lines = [json.dumps({"env_info": "sys.platform: linux", "seed": 1})]
    for e in range(1, 13):
        for it in (50, 100):
            i = (e - 1) * 2 + it // 50
            lines.append(json.dumps({"mode": "train", "epoch": e, "iter": it, "lr": 0.02, "loss": falling(i * 5)}))
        lines.append(json.dumps({"mode": "val", "epoch": e, "iter": 100, "loss": overfit_val(e * 10)}))
    path = folder / "20240102_100000.log.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def trainer_state(folder: Path, name: str = "__init__.py", sets=("wiki", "code")) -> Path:
    hist = []
    for s in range(1, N + 1):
        hist.append({"epoch": s / 10, "grad_norm": 1.0, "learning_rate": 1e-4, "loss": falling(s) * 0.5, "step": s})
        if s % 5 == 0:
            for k, st in enumerate(sets):
                hist.append({"epoch": s / 10, f"eval_{st}_loss": overfit_val(s) + k, "step": s,
                             f"eval_{st}_runtime": 1.0})
    path = folder / name
    path.write_text(json.dumps({"global_step": N, "log_history": hist}, indent=2))
    return path


def keras_csv(folder: Path) -> Path:
    rows = ["epoch,accuracy,loss,val_accuracy,val_loss"]
    rows += [f"{e},0.8,{falling(e * 4):.5f},0.7,{overfit_val(e * 4):.5f}" for e in range(30)]
    path = folder / "training_log"  # no extension: content decides
    path.write_text("\n".join(rows) + "\n")
    return path


def wandb_export(folder: Path) -> Path:
    rows = ["Step,run-a - train/loss,run-a - train/loss__MIN,run-a - train/loss__MAX,"
            "run-b - train/loss,run-b - train/loss__MIN,run-b - train/loss__MAX"]
    for i in range(N):
        b = "NaN" if i >= NAN_AT else f"{falling(i):.4f}"
        rows.append(f"{i},{falling(i):.4f},{falling(i):.4f},{falling(i):.4f},{b},{b},{b}")
    path = folder / "wandb_export_2024.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def mlflow_store(folder: Path) -> Path:
    root = folder / "mlruns" / "0"
    for k, (rid, start) in enumerate((("aaa111", 1000), ("bbb222", 2000))):
        run = root / rid
        (run / "metrics" / "train").mkdir(parents=True)
        (run / "params").mkdir()
        (run / "meta.yaml").write_text(f"artifact_uri: file:///x\nrun_id: {rid}\nrun_name: 'run-{k}'\n"
                                       f"start_time: {start}\nstatus: 3\nexperiment_id: '0'\n")
        (run / "params" / "lr").write_text("0.001")
        lines = [f"{1700000000000 + i * 1000} {'nan' if (k == 1 and i >= NAN_AT) else falling(i)} {i}" for i in range(N)]
        (run / "metrics" / "train" / "loss").write_text("\n".join(lines) + "\n")
        (run / "metrics" / "val_loss").write_text(
            "\n".join(f"{1700000000000 + i * 1000} {overfit_val(i)} {i}" for i in range(0, N, 5)) + "\n")
    (root / "meta.yaml").write_text("experiment_id: '0'\nname: Default\n")
    return folder / "mlruns"


def tfevents(folder: Path, *, corrupt: bool = False) -> Path:
    """An event file written with TensorBoard's own writer; ``corrupt`` flips a byte of one value."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    d = folder / "tb"
    w = EventFileWriter(str(d))
    for i in range(N):
        v = math.nan if i >= NAN_AT else falling(i)
        w.add_event(event_pb2.Event(wall_time=1e9 + i, step=i, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="train/loss", simple_value=v)])))
    w.close()
    path = next(d.glob("*tfevents*"))
    if corrupt:
        data = bytearray(path.read_bytes())
        # The 11th record's float value: flip a bit inside its data, leave its CRC as written.
        pos = 0
        for _ in range(11):
            (length,) = struct.unpack_from("<Q", data, pos)
            pos += 12 + length + 4
        (length,) = struct.unpack_from("<Q", data, pos)
        data[pos + 12 + length - 2] ^= 0x40
        path.write_bytes(bytes(data))
        return path, pos
    return path


def read_paste(folder: Path, text: str):
    """The run ``load_run`` reads from ``text`` saved as a console log under ``folder`` (a paste)."""
    from runlens.io.loader import load_run

    path = Path(folder) / "log.txt"
    path.write_text(text)
    return load_run(path)


def column(run, table: str, name: str) -> list[float]:
    """``run``'s column ``name`` of ``table`` as floats (NaN for null)."""
    import numpy as np

    return np.asarray(run.column(table, name), dtype=float).tolist()
