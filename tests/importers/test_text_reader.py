"""The generic text-log reader: dialects, noise, several runs, overrides, bad input."""

from __future__ import annotations

import math

import logmaker
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from runlens.analysis import analyze
from runlens.cli import main
from runlens.errors import ImportFailedError
from runlens.io.importers import import_run, read
from runlens.io.loader import load_run


def codes(diagnosis) -> set[str]:
    return {f.code for f in diagnosis.findings}


def first_nan_step(imp, column="loss") -> int:
    s = imp.train[column]
    return int(s.steps[[math.isnan(v) or math.isinf(v) for v in s.values]].min())


@pytest.mark.parametrize("crlf, quoted", [(False, False), (True, False), (False, True)])
def test_nanogpt_nan_is_data_and_fires(tmp_path, crlf, quoted):
    path = logmaker.nanogpt(tmp_path, crlf=crlf, quoted=quoted)
    imp = read("text", path)
    assert first_nan_step(imp) == logmaker.NAN_AT
    assert len(imp.evals["val_loss"].steps) == 3
    assert "time_ms" in imp.train and "mfu" in imp.train  # the rest kept as user scalars, a unit of time in the name
    d = analyze(str(path))
    assert "nonfinite_loss" in codes(d)
    assert any(w.startswith("import (text): scalars: 3 repeated steps") for w in d.warnings)  # import notes


def test_keras_console_steps_overfitting_and_several_runs(tmp_path):
    path = logmaker.keras_console(tmp_path, runs=2)
    imp = read("text", path)
    steps = imp.train["loss"].steps
    # Each epoch's last progress line, at the epoch it closes; the in-epoch running means are not kept.
    assert list(steps[:3]) == [1, 2, 3]
    assert any("running means" in w for w in imp.warnings)
    assert any("the log holds 2 runs" in w for w in imp.warnings)
    assert imp.train["loss"].values[0] == pytest.approx(round(logmaker.falling(4) + 1, 4))  # the last run
    first = read("text", path, run=1)
    assert first.train["loss"].values[0] == pytest.approx(round(logmaker.falling(4), 4))
    with pytest.raises(ImportFailedError, match="holds 2 run"):
        read("text", path, run=3)
    single = logmaker.keras_console(tmp_path / "one" if (tmp_path / "one").mkdir() is None else tmp_path)
    assert analyze(str(single)).curve.label == "overfitting"


def test_mmengine_spike_and_grad_norm(tmp_path):
    path = logmaker.mmengine(tmp_path, spike_at=70)
    imp = read("text", path)
    assert imp.config["log_style"] == {"Epoch(train)": logmaker.N}
    assert imp.train["loss"].steps[0] == 9 and "grad_norm" in imp.train and "lr" in imp.train
    assert "eta" not in imp.train and "time_" in imp.train
    assert "loss_spikes" in codes(analyze(str(path)))


def test_log_without_loss_is_imported_with_null_loss(tmp_path, check_runlog):
    path = logmaker.megatron_no_loss(tmp_path)
    run = import_run("text", path, tmp_path / "run")
    check_runlog(run)
    s = pq.read_table(next((run / "scalars").glob("*.parquet")))
    assert s.column("loss").null_count == s.num_rows == 40
    assert all(math.isnan(v) for v in s.column("grad_norm").to_pylist())
    assert "number_of_nan_iterations" in s.column_names
    d = analyze(str(path))
    assert "nonfinite_gradient" in codes(d) and d.curve.label == "insufficient_data"
    assert any("no training loss" in w for w in d.warnings)


def test_a_log_with_nothing_to_judge_is_refused_naming_its_fields(tmp_path):
    path = tmp_path / "speed.log"
    path.write_text("".join(f"step {i}: tokens/s 1200, mfu 40%\n" for i in range(10)))
    with pytest.raises(ImportFailedError, match=r"no training loss, gradient norm.*found: mfu, tokens_s"):
        import_run("text", path, tmp_path / "run")


@pytest.mark.parametrize("dialect", ["mlx", "caffe", "bigdl", "plain", "pipes", "equals", "bracket",
                                     "jsonline", "dictrepr", "tqdm"])
def test_every_dialect_reads_the_nan(tmp_path, dialect):
    path = logmaker.misc_dialects(tmp_path)[dialect]
    imp = read("text", path)
    s = imp.train["loss"]
    assert len(s.steps) == 40, (dialect, imp.train.keys(), imp.warnings)
    nan_steps = sorted(int(st) for st, v in zip(s.steps, s.values, strict=True) if not math.isfinite(v))
    assert len(nan_steps) == 10
    assert list(s.steps) == sorted(s.steps)


def test_overrides_step_loss_and_val_loss(tmp_path):
    path = tmp_path / "custom.log"
    path.write_text("".join(f"it {i} | objective_a {1 / (i + 1):.4f} | held_out {2 / (i + 1):.4f} | "
                            f"loss 99\n" for i in range(30)))
    imp = read("text", path, step="it", loss="objective_a", val_loss="held_out")
    assert list(imp.train["loss"].steps) == list(range(30))
    assert imp.train["loss"].values[1] == 0.5 and imp.evals["val_loss"].values[1] == 1.0
    assert "loss_default" in imp.train  # the field called loss is kept, not lost
    with pytest.raises(ImportFailedError, match="no line carries a 'nope' field"):
        read("text", path, step="nope")


def test_analyze_cli_takes_the_overrides(tmp_path):
    path = tmp_path / "custom.log"
    path.write_text("".join(f"it {i} | objective_a {'nan' if i > 20 else 1 / (i + 1)} \n" for i in range(30)))
    res = CliRunner().invoke(main, ["analyze", str(path), "--step", "it", "--loss", "objective_a",
                                    "--format", "json", "--fail-on", "never"])
    assert res.exit_code == 0, res.output
    assert '"nonfinite_loss"' in res.output
    run = load_run(str(path), import_options={"step": "it", "loss": "objective_a"})
    assert run.scalars.num_rows == 30


def test_dry_run_prints_the_mapping_and_writes_nothing(tmp_path):
    path = logmaker.nanogpt(tmp_path)
    res = CliRunner().invoke(main, ["import", "auto", str(path), str(tmp_path / "out"), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "read as text" in res.output and "skipped" in res.output
    assert "scalars.loss" in res.output and "evals.val_loss <- 'val loss'" in res.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"), (b"\n\n  \n", "empty file"), (b"\x00\x01\x02binary\x00" * 100, "binary file"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, content, message):
    path = tmp_path / "x.log"
    path.write_bytes(content)
    res = CliRunner().invoke(main, ["analyze", str(path)])
    assert res.exit_code == 2 and message in res.output and res.output.count("\n") == 1, res.output
    with pytest.raises(ImportFailedError, match=message):
        read("text", path)


def test_mixed_encodings_and_a_huge_line(tmp_path):
    path = tmp_path / "mixed.log"
    body = b"".join(f"step {i}: loss {1 / (i + 1):.3f} caf\xe9 \xff\xfe\n".encode("latin-1") for i in range(20))
    path.write_bytes(b"x" * (3 << 20) + b"\n" + body)  # one 3 MB line: read in pieces, then ignored
    imp = read("text", path)
    assert len(imp.train["loss"].steps) == 20


def test_memory_does_not_grow_with_the_file(tmp_path):
    """The text is streamed: reading 16 MB of mostly noise keeps a small fraction of it in memory."""
    import tracemalloc

    path = tmp_path / "big.log"
    noise = "".join(f"WARNING: tensorflow/core/graph.cc:{i} something deprecated, see docs page {i}\n"
                    for i in range(2000))
    with open(path, "w") as f:
        for k in range(100):
            f.write(noise)
            f.write(f"step {k}: loss {1 / (k + 1):.4f}\n")
    size = path.stat().st_size
    tracemalloc.start()
    imp = read("text", path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(imp.train["loss"].steps) == 100
    assert size > 15e6 and peak < 0.1 * size, (size, peak)


def test_utf16_log_and_dicts_that_carry_their_step(tmp_path):
    from runlens.io.importers import detect_kind

    path = tmp_path / "ps.log"  # PowerShell's `python train.py > ps.log` writes UTF-16 with a BOM
    path.write_text("".join(f"{{'loss': {1 / (i + 1)}, 'step': {i}}}\n" for i in range(12)), encoding="utf-16")
    assert detect_kind(path) == "text"
    imp = read("text", path)
    assert list(imp.train["loss"].steps) == list(range(12)) and imp.train["loss"].values[1] == 0.5
