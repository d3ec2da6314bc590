"""A log holding several runs is parsed once, however many runs it holds and whichever command
judges them (review: "a multi-run log is parsed N+1 times": once to count the runs, once per run).

Each parser is wrapped with a mock that still calls it, and counted.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
from _cli import invoke

from runlens.audit import audit
from tests.multirun_logs import STEPS, diverging, healthy, write_csv, write_text

RUNS = (healthy, diverging, healthy, healthy)  # four runs: N+1 would be five parses


def _hf_console(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    launches = []
    for curve in RUNS:
        launches.append("***** Running training *****\n")
        launches += [f" 10%|#  | {s}/120 [00:01<00:10, 9.8it/s]{{'loss': {curve(s)}, 'epoch': {s / 120:.3f}}}\n"
                     for s in STEPS]
        launches.append("{'train_runtime': 31.0, 'train_loss': 0.9, 'epoch': 1.0}\n")
    path.write_text("".join(launches))
    return path


def _wandb_export(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    names = [f"run-{k}" for k in range(len(RUNS))]
    header = "Step," + ",".join(f"{n} - train/loss" for n in names)
    rows = [f"{s}," + ",".join(str(curve(s)) for curve in RUNS) for s in STEPS]
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


# kind -> (the function that reads the whole source, as the importer calls it; how the source is made)
SOURCES: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "text": ("runlens.io.importers.text._scan", lambda d: write_text(d / "train.log", *RUNS)),
    "csv": ("runlens.io.importers.table.read_table", lambda d: write_csv(d / "train.csv", *RUNS)),
    "hf": ("runlens.io.importers.hf._scan_console", lambda d: _hf_console(d / "stdout.txt")),
    "wandb": ("runlens.io.importers.csv.read_rows", lambda d: _wandb_export(d / "export.csv")),
}


@contextmanager
def counted(target: str) -> Iterator[mock.MagicMock]:
    module, name = target.rsplit(".", 1)
    with mock.patch(target, wraps=getattr(importlib.import_module(module), name)) as spy:
        yield spy


@pytest.fixture(params=sorted(SOURCES))
def source(request, tmp_path):
    target, make = SOURCES[request.param]
    return target, make(tmp_path / "logs")


def test_analyze_parses_the_log_once_and_judges_each_run(source):
    target, path = source
    with counted(target) as parser:
        res = invoke("analyze", path, "--format", "json", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    assert [e["index"] for e in json.loads(res.stdout)["runs_in_file"]] == [1, 2, 3, 4]
    assert parser.call_count == 1


def test_report_parses_the_log_once(source, tmp_path):
    target, path = source
    with counted(target) as parser:
        res = invoke("report", path, "-o", tmp_path / "out", "--format", "md", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    assert "Run 2 of 4 in this log (the worst)" in res.stdout
    assert parser.call_count == 1


def test_audit_parses_the_log_once_for_its_row_per_run(source):
    target, path = source
    with counted(target) as parser:
        rows = audit([path], workers=1).rows
    assert sorted(r.run.rsplit("#", 1)[-1] for r in rows) == ["run-1", "run-2", "run-3", "run-4"]
    assert parser.call_count == 1
    with counted(target) as parser:
        res = invoke("audit", path, "--format", "json", "--workers", "1", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)) == 4
    assert parser.call_count == 1


def test_audit_builds_each_run_once_and_says_the_same_of_each(source):
    # The run built to count the runs is audited as its own index (review: the audit worker built the
    # default run, then every run again); its row reads as the rows of runs built for their index.
    _, path = source
    with counted("runlens.io.importers.memory.to_run") as build:
        rows = audit([path], workers=1).rows
    assert build.call_count == len(RUNS)
    by_run = {r.run.rsplit("#", 1)[-1]: r for r in rows}
    assert sorted(by_run) == ["run-1", "run-2", "run-3", "run-4"]
    for k, row in enumerate(sorted(by_run), start=1):
        warnings = list(by_run[row].warnings)
        assert warnings[0].startswith(f"run {k} of 4 in this log, each audited as its own row"), warnings
        assert not any("pick another with --run" in w for w in warnings), warnings


def test_a_csv_is_decoded_once_sniff_included(tmp_path):
    # The sniff reads a structured log whole to decide its kind; the reader's one-entry cache hands
    # that table to the importer, so the bytes are decoded once for all the runs.
    path = write_csv(tmp_path / "train.csv", *RUNS)
    with counted("runlens.io.reader._read_table") as decode:
        res = invoke("analyze", path, "--format", "json", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    assert decode.call_count == 1


def test_the_parse_count_does_not_grow_with_the_runs(tmp_path):
    path = write_text(tmp_path / "many.log", *([healthy] * 12))
    with counted("runlens.io.importers.text._scan") as parser:
        res = invoke("analyze", path, "--format", "json")
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["runs_in_file"]) == 12
    assert parser.call_count == 1


def test_the_runs_are_healthy_where_made_so():
    # The fixture's second run is the one that goes NaN: the others must not, or "the worst" is moot.
    assert all(math.isfinite(healthy(s)) for s in STEPS) and math.isnan(diverging(max(STEPS)))


@pytest.fixture
def served_log(tmp_path):
    import functools
    import http.server
    import threading

    pytest.importorskip("aiohttp")
    write_text(tmp_path / "train.log", *RUNS)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/train.log"
    server.shutdown()


def test_a_log_named_by_a_url_is_downloaded_and_parsed_once(served_log):
    with counted("runlens.io.remote._stage") as download, counted("runlens.io.importers.text._scan") as parser:
        res = invoke("analyze", served_log, "--format", "json", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["run"] == served_log and len(obj["runs_in_file"]) == 4
    assert "/tmp" not in json.dumps(obj["warnings"])  # the staged copy is never named
    assert download.call_count == 1 and parser.call_count == 1


def test_each_run_is_built_once(source, tmp_path):
    # The run built to count the runs is judged as its own index: N builds, not N+1 (review:
    # "judge builds the default run, then every run including that one again").
    _, path = source
    with counted("runlens.io.importers.memory.to_run") as build:
        res = invoke("analyze", path, "--format", "json", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    assert [e["reported"] for e in json.loads(res.stdout)["runs_in_file"]] == [False, True, False, False]
    assert build.call_count == len(RUNS)
    with counted("runlens.io.importers.memory.to_run") as build:
        res = invoke("report", path, "-o", tmp_path / "out", "--format", "md", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    assert build.call_count == len(RUNS)


def test_the_default_run_is_reused_where_it_lies_not_only_last(tmp_path):
    # A relaunch that died at once is not the run a table is read as by default: here run 3 of 4 is.
    path = write_csv(tmp_path / "train.csv", diverging, healthy, healthy)
    with path.open("a") as f:
        f.write("1,2.5\n2,2.4\n")
    with counted("runlens.io.importers.memory.to_run") as build:
        res = invoke("analyze", path, "--format", "json", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert [(e["index"], e["reported"]) for e in obj["runs_in_file"]] == [(1, True), (2, False), (3, False), (4, False)]
    assert [e["steps"] for e in obj["runs_in_file"]] == [[1, 120]] * 3 + [[1, 2]]
    assert obj["curve"] == "diverged" and build.call_count == 4
