"""Loose logs below the top level of a folder: found by a sniff of their head, analyzed or named (issue 19)."""

from __future__ import annotations

import json
import math
import shutil

import pytest
from _cli import SAMPLES, invoke

from runlens.io.discover import discover_runs
from runlens.io.loose import sniff_loose


def _falling(i: int) -> float:
    return 2.0 * math.exp(-i / 40) + 0.2 + 0.01 * math.sin(i)


def _tree(root):
    """A user's folder: logs one level down, a run folder, notes and data beside them."""
    shutil.copytree(SAMPLES / "healthy", root / "recorded")
    (root / "exp1").mkdir(parents=True)
    lines = [f"step {i} | loss {_falling(i) if i < 90 else float('nan'):.4f}" for i in range(120)]
    (root / "exp1" / "train.log").write_text("loading data...\n" + "\n".join(lines) + "\n")
    (root / "exp2" / "logs").mkdir(parents=True)
    (root / "exp2" / "logs" / "losses.csv").write_text(
        "step,loss\n" + "".join(f"{i},{_falling(i)}\n" for i in range(120)))
    (root / "exp3").mkdir()
    (root / "exp3" / "history.json").write_text(json.dumps(
        {"loss": [_falling(10 * e) for e in range(30)], "val_loss": [_falling(10 * e) + 0.1 for e in range(30)]}))
    (root / "exp3" / "config.json").write_text(json.dumps({"loss": "ce", "lr": 0.1, "layers": 4}))
    (root / "data").mkdir()
    (root / "data" / "features.csv").write_text("x,y,label\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(50)))
    (root / "exp4").mkdir()
    (root / "exp4" / "job.out").write_text("node 3 allocated\nstarting\n")
    shutil.copy(SAMPLES / "README.md", root / "exp4" / "README.md")
    return root


def _rel(paths, root):
    return sorted(str(p)[len(str(root)) + 1:] for p in paths)


def test_loose_logs_at_any_depth_are_found_and_the_rest_named_or_left_out(tmp_path):
    root = _tree(tmp_path / "work")
    skipped: list[tuple[str, str]] = []
    found = discover_runs([root], skipped=skipped)
    assert _rel(found, root) == ["exp1/train.log", "exp2/logs/losses.csv", "exp3/history.json", "recorded"]
    assert _rel([p for p, _ in skipped], root) == ["exp4/README.md", "exp4/job.out"]
    why = dict((p[len(str(root)) + 1:], w) for p, w in skipped)
    assert "metrics table" in why["exp4/README.md"] and "training step" in why["exp4/job.out"]


def test_discovery_decides_by_the_head_without_reading_a_log(tmp_path, monkeypatch):
    import runlens.io.importers as importers
    import runlens.io.loader as loader
    import runlens.io.reader as reader

    root = _tree(tmp_path / "work")
    shutil.rmtree(root / "recorded")

    def refuse(*args, **kw):
        raise AssertionError("discovery read a whole log")

    monkeypatch.setattr(loader, "load_run", refuse)
    monkeypatch.setattr(reader, "read_table", refuse)
    monkeypatch.setattr(importers, "detect_kind", refuse)
    assert len(discover_runs([root])) == 3


def test_report_analyzes_the_logs_below_the_top_level(tmp_path):
    root = _tree(tmp_path / "work")
    res = invoke("report", root, "-o", tmp_path / "out", "--format", "md", "--fail-on", "error")
    assert res.exit_code == 1, res.output  # exp1's loss became NaN
    assert "4 runs" in res.stdout
    line = next(x for x in res.stdout.splitlines() if x.startswith("train:"))
    assert "Diverged from step 90" in line
    assert "skipped" in res.stderr and "job.out" in res.stderr and "README.md" in res.stderr


def test_audit_lists_the_logs_below_the_top_level(tmp_path):
    root = _tree(tmp_path / "work")
    res = invoke("audit", root, "--format", "json", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    rows = {r["run"][len(str(root)) + 1:]: r for r in json.loads(res.stdout)}
    assert sorted(rows) == ["exp1/train.log", "exp2/logs/losses.csv", "exp3/history.json", "recorded"]
    assert rows["exp1/train.log"]["curve"] == "diverged"


def test_a_loose_log_that_passes_the_sniff_but_cannot_be_read_is_named_not_fatal(tmp_path):
    root = _tree(tmp_path / "work")
    # A header that names a loss, and no row under it: the head says log, the table reader refuses it.
    (root / "exp4" / "metrics.csv").write_text("step,loss\n")
    assert sniff_loose(str(root / "exp4" / "metrics.csv")) is None
    for command in ("analyze", "report"):
        res = invoke(command, root, *(["--format", "json"] if command == "analyze" else ["-o", tmp_path / "o"]),
                     "--fail-on", "never")
        assert res.exit_code == 0, res.output
        assert "skipped" in res.stderr and "metrics.csv" in res.stderr
    assert len(json.loads(invoke("analyze", root, "--format", "json", "--fail-on", "never").stdout)) == 4


def test_a_log_named_on_the_command_line_that_cannot_be_read_is_still_an_error(tmp_path):
    empty = tmp_path / "metrics.csv"
    empty.write_text("step,loss\n")
    res = invoke("analyze", empty)
    assert res.exit_code == 2 and "Traceback" not in res.output


@pytest.mark.parametrize("name, content, verdict", [
    ("train.log", "epoch 1 step 10 loss 2.3\nepoch 1 step 20 loss 2.1\nepoch 1 step 30 loss 1.9\n", "log"),
    ("out.txt", "| epoch 001 | loss 9.12 | ppl 556\n| epoch 002 | loss 8.10 | ppl 330\n"
                "| epoch 003 | loss 7.55 | ppl 190\n", "log"),
    ("results.md", "# results\n\n| step | train loss | val loss |\n|---|---|---|\n| 1 | 2.3 | 2.4 |\n", "log"),
    ("metrics.tsv", "step\tval_loss\n1\t2.3\n2\t2.2\n", "log"),
    ("m.jsonl", '{"step": 1, "grad_norm": 1.5}\n{"step": 2, "grad_norm": 1.2}\n', "log"),
    ("log", "main/loss validation/main/loss\n", "named"),
    ("notes.md", "We saw the loss fall.\n\n| run | result |\n|---|---|\n| a | good |\n", "named"),
    ("job.err", "Traceback (most recent call last):\n", "named"),
    ("requirements.txt", "torch==2.3\nnumpy\n", "silent"),
    ("data.csv", "x,y\n1,2\n", "silent"),
    ("config.json", '{"loss": "ce", "lr": 0.1}', "silent"),
    ("model.py", "loss = criterion(out, y)\n" * 5, "silent"),
    ("weights.log", "\x00\x01\x02binary", "named"),
    ("notes.log", "loss was 2.3 on monday\nloss 1.9 tuesday\nloss near 1.5 now\n", "named"),
    ("console.out", "{'loss': 2.31, 'grad_norm': 1.2, 'epoch': 0.1}\n" * 3, "log"),
    ("paddle.log", "[2024/01/01] epoch: [1/10], global_step: 10, loss: 2.3\n" * 3, "log"),
])
def test_sniff_loose(tmp_path, name, content, verdict):
    path = tmp_path / name
    path.write_text(content)
    got = sniff_loose(str(path))
    assert {None: "log", "": "silent"}.get(got, "named") == verdict, got


def test_sniff_loose_reads_a_gzipped_log(tmp_path):
    import gzip

    path = tmp_path / "train.log.gz"
    path.write_bytes(gzip.compress(b"".join(b"step %d loss %.3f\n" % (i, _falling(i)) for i in range(50))))
    assert sniff_loose(str(path)) is None
