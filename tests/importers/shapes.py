"""Logs in every shape the structure-first reader takes, written by the tests (never copies of others' files).

Each maker writes under ``folder`` and returns the path and the step numbers as the file spells them,
so a test can check the analysis against the file. The curves come from :mod:`logmaker`: a NaN from
``NAN_AT``, a validation loss that turns up at 40% of the run, or one spike.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

from logmaker import NAN_AT, N, falling, overfit_val

NAN_SPELLINGS = ("nan", "-nan", "NaN", "nanxxx", "inf", "-inf", "Infinity", "1.#QNAN", "tensor(nan)")


def records_json(folder: Path) -> tuple[Path, list[int]]:
    """Chainer's ``log``: a pretty-printed list of records, no extension; NaN loss from NAN_AT."""
    steps = [100 * (i + 1) for i in range(N)]
    rows = [{"iteration": s, "epoch": i // 10, "main/loss": math.nan if i >= NAN_AT else falling(i),
             **({"validation/main/loss": falling(i) + 0.1} if i % 10 == 9 else {})} for i, s in enumerate(steps)]
    path = folder / "log"
    path.write_text(json.dumps(rows, indent=4))
    return path, steps


def history_columns(folder: Path) -> tuple[Path, list[int]]:
    """Keras ``history.history`` dumped on one line: a dict of lists; the row is the index; overfits."""
    n = 60
    doc = {"accuracy": [0.5 + i / 200 for i in range(n)], "loss": [falling(2 * i) for i in range(n)],
           "val_accuracy": [0.5] * n, "val_loss": [overfit_val(2 * i) for i in range(n)]}
    path = folder / "training_history.json"
    path.write_text(json.dumps(doc))
    return path, list(range(n))


def history_with_epochs(folder: Path) -> tuple[Path, list[int]]:
    """A hand-written history: metadata beside the lists and an ``epochs`` list; pretty-printed."""
    n = 60
    doc = {"backbone": "resnet", "classes": ["a", "b", "c"], "epochs": list(range(1, n + 1)),
           "train_loss": [falling(2 * i) for i in range(n)], "val_loss": [overfit_val(2 * i) for i in range(n)],
           "learning_rate": [1e-3] * n, "test_acc": 0.7}
    path = folder / "history.json"
    path.write_text(json.dumps(doc, indent=2))
    return path, list(range(1, n + 1))


def jsonl_twice(folder: Path, spike_at: int = 70) -> tuple[Path, list[int]]:
    """LLaMA-Factory's ``trainer_log.jsonl``: ``current_steps``, each line written twice; one spike."""
    steps = [5 * (i + 1) for i in range(N)]
    lines = []
    for i, s in enumerate(steps):
        loss = falling(i) * (8.0 if i == spike_at else 1.0)
        row = json.dumps({"current_steps": s, "total_steps": 5 * N, "loss": loss, "learning_rate": 1e-4,
                          "epoch": s / (5 * N), "elapsed_time": "0:01:02"})
        lines += [row, row]
    path = folder / "trainer_log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, steps


def flair_tsv(folder: Path) -> tuple[Path, list[int]]:
    """Flair's ``loss.tsv``: EPOCH, TIMESTAMP, ..., TRAIN_LOSS, DEV_LOSS, TEST_LOSS; ``_`` for empty; overfits."""
    n = 60
    lines = ["EPOCH\tTIMESTAMP\tBAD_EPOCHS\tLEARNING_RATE\tTRAIN_LOSS\tDEV_LOSS\tDEV_F1\tTEST_LOSS"]
    for e in range(1, n + 1):
        lines.append(f"{e}\t12:00:{e % 60:02d}\t0\t0.1000\t{falling(2 * e)}\t{overfit_val(2 * e)}\t0.7\t_")
    path = folder / "loss.tsv"
    path.write_text("\n".join(lines) + "\n")
    return path, list(range(1, n + 1))


def ultralytics_padded(folder: Path) -> tuple[Path, list[int]]:
    """Ultralytics ``results.csv`` with space-padded cells; losses only as parts; validation overfits."""
    n = 60
    head = ["epoch", "train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/mAP50(B)",
            "val/box_loss", "val/cls_loss", "val/dfl_loss", "lr/pg0"]
    lines = [",".join(h.rjust(22) for h in head)]
    for e in range(n):
        t, v = falling(2 * e) / 3, overfit_val(2 * e) / 3
        cells = [e, t, t, t, 0.5, v, v, v, 0.01]
        lines.append(",".join(f"{c:>22}" for c in cells))
    path = folder / "results.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, list(range(n))


def yolo_results_txt(folder: Path) -> tuple[Path, list[int]]:
    """YOLOv7 ``results.txt``: no header, runs of spaces, ``e/N`` first, validation parts overfit."""
    n = 60
    lines = []
    for e in range(n):
        t, v = falling(2 * e) / 3, overfit_val(2 * e) / 3
        cells = [f"{e}/{n - 1}", "7.37G", t, t, t, 3 * t, 53, 640, 0.5, 0.5, 0.4, 0.2, v, v, v]
        lines.append("".join(f"{c:>10.5g}" if isinstance(c, float) else f"{c!s:>10}" for c in cells))
    path = folder / "results.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, list(range(n))


def semicolon_spellings(folder: Path) -> tuple[Path, list[int], int]:
    """A semicolon table, quoted cells, its header repeated mid-file, every NaN/Inf spelling in the loss."""
    steps = list(range(0, 10 * N, 10))
    lines = ['"step";"loss";"lr"']
    nonfinite = 0
    for i, s in enumerate(steps):
        if i == N // 2:
            lines.append('"step";"loss";"lr"')
        if i >= NAN_AT:
            cell = NAN_SPELLINGS[i % len(NAN_SPELLINGS)]
            nonfinite += 1
        else:
            cell = f"{falling(i):.5f}"
        lines.append(f'{s};"{cell}";0.001')
    path = folder / "metrics.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, steps, nonfinite


def appended_runs(folder: Path) -> tuple[Path, list[int]]:
    """Two launches appended to one CSV: the step counter starts again; the second run goes NaN."""
    lines = ["step,loss"]
    lines += [f"{s},{falling(s)}" for s in range(40)]
    second = list(range(N))
    lines += [f"{s},{math.nan if s >= NAN_AT else falling(s)}" for s in second]
    path = folder / "appended.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, second


def perplexity_only(folder: Path) -> tuple[Path, list[int]]:
    steps = list(range(10, 10 * N + 1, 10))
    path = folder / "ppl.jsonl"
    path.write_text("\n".join(json.dumps({"step": s, "ppl": math.exp(falling(i))}) for i, s in enumerate(steps)))
    return path, steps


def gz(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    return out


def read_paste(tmp_path: Path, text: str, name: str = "paste.txt"):
    """``text`` written to ``tmp_path / name``, sniffed (it must be a table) and read."""
    from runlens.io.importers import detect_kind, read

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    kind = detect_kind(path)
    assert kind == "table", kind
    return read(kind, path)
