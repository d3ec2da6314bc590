"""``runlens audit`` through the real CLI (a subprocess): detector parameters (``--set``,
``--config``) reach every worker, local or Dask; ``--color``; error rows name no exception class."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import subprocess
import sys

import pytest
from runtree import write_run

ESC = "\x1b["


def runlens(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    return subprocess.run([sys.executable, "-m", "runlens", *map(str, args)], capture_output=True, text=True,
                          env={**base, **(env or {})}, timeout=300)


@pytest.fixture(scope="module")
def spiky(tmp_path_factory):
    """Two runs whose only finding is loss_spikes (a warning) at the default parameters."""
    base = tmp_path_factory.mktemp("spiky")
    write_run(base / "s1", kind="spiky", steps=2000, seed=3)
    write_run(base / "s2", kind="spiky", steps=2000, seed=4)
    return base


def codes(proc) -> list[list[str]]:
    return [[f["code"] for f in row["findings"]] for row in json.loads(proc.stdout)]


QUIET = "loss_spikes.min_spikes=100000"  # more spikes than any run has steps: never fires


@pytest.mark.parametrize("workers", ["1", "2"])
def test_set_reaches_local_workers(spiky, workers):
    default = runlens("audit", spiky, "--format", "json", "-q", "--workers", workers, "--fail-on", "warning")
    assert default.returncode == 1 and codes(default) == [["loss_spikes"], ["loss_spikes"]]
    quiet = runlens("audit", spiky, "--format", "json", "-q", "--workers", workers, "--fail-on", "warning",
                    "--set", QUIET)
    assert quiet.returncode == 0, quiet.stderr
    assert codes(quiet) == [[], []]


def test_set_reaches_dask_workers(spiky):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=50) as cluster:
        local = runlens("audit", spiky, "--format", "json", "-q", "--workers", "1", "--set", QUIET)
        remote = runlens("audit", spiky, "--format", "json", "-q", "--set", QUIET,
                         "--scheduler", cluster.scheduler_address)
        plain = runlens("audit", spiky, "--format", "json", "-q", "--scheduler", cluster.scheduler_address)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout and codes(remote) == [[], []]
    assert codes(plain) == [["loss_spikes"], ["loss_spikes"]]  # the cluster itself keeps no setting


@pytest.mark.parametrize("suffix,text", [
    (".json", '{"loss_spikes": {"min_spikes": 100000}}'),
    (".toml", "[detectors.loss_spikes]\nmin_spikes = 100000\n"),
])
def test_config_file(spiky, tmp_path, suffix, text):
    config = tmp_path / f"detectors{suffix}"
    config.write_text(text)
    proc = runlens("audit", spiky, "--format", "json", "-q", "--workers", "1", "--config", config)
    assert proc.returncode == 0, proc.stderr
    assert codes(proc) == [[], []]
    # --set wins over the file, as in analyze.
    back = runlens("audit", spiky, "--format", "json", "-q", "--workers", "1", "--config", config,
                   "--set", "loss_spikes.min_spikes=1")
    assert codes(back) == [["loss_spikes"], ["loss_spikes"]]


@pytest.mark.parametrize("setting,says", [
    ("loss_spikes.z_mn=8", "did you mean 'z_min'"),
    ("loss_spike.z_min=8", "did you mean 'loss_spikes'"),
    ("loss_spikes", "CODE.PARAM=VALUE"),
])
def test_a_bad_setting_is_one_line_and_exit_2(spiky, setting, says):
    proc = runlens("audit", spiky, "-q", "--set", setting)
    assert proc.returncode == 2
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and proc.stderr.startswith("runlens: ")
    assert says in proc.stderr


def test_a_missing_config_file_is_one_line_and_exit_2(spiky, tmp_path):
    proc = runlens("audit", spiky, "-q", "--config", tmp_path / "nope.toml")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "config file" in proc.stderr


# -- colour ----------------------------------------------------------------------

def test_color_always_marks_severities_and_keeps_the_columns(spiky):
    plain = runlens("audit", spiky, "-q", "--workers", "1", "--color", "never")
    colored = runlens("audit", spiky, "-q", "--workers", "1", "--color", "always")
    assert ESC not in plain.stdout
    assert f"{ESC}33mwarning{ESC}0m" in colored.stdout
    # The same table once the colour codes are taken out: the padding stays aligned.
    assert colored.stdout.replace(f"{ESC}33m", "").replace(f"{ESC}0m", "") == plain.stdout


def test_color_auto_is_off_in_a_pipe_and_with_no_color(spiky):
    assert ESC not in runlens("audit", spiky, "-q", "--workers", "1").stdout
    assert ESC not in runlens("audit", spiky, "-q", "--workers", "1", "--color", "auto", env={"NO_COLOR": "1"}).stdout


def _on_a_terminal(*args, env: dict | None = None) -> str:
    leader, follower = pty.openpty()
    base = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    proc = subprocess.Popen([sys.executable, "-m", "runlens", *map(str, args)], stdout=follower,
                            stderr=subprocess.DEVNULL, env={**base, **(env or {})})
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=300)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_color_auto_is_on_for_a_terminal_unless_no_color(spiky):
    assert f"{ESC}33mwarning" in _on_a_terminal("audit", spiky, "-q", "--workers", "1")
    assert ESC not in _on_a_terminal("audit", spiky, "-q", "--workers", "1", env={"NO_COLOR": "1"})


def test_color_never_reaches_a_file_or_another_format(spiky, tmp_path):
    out = tmp_path / "a.txt"
    runlens("audit", spiky, "-q", "--workers", "1", "--color", "always", "-o", out)
    assert ESC not in out.read_text()
    assert ESC not in runlens("audit", spiky, "-q", "--workers", "1", "--color", "always", "--format", "csv").stdout


# -- error rows ------------------------------------------------------------------

def test_error_rows_show_the_message_without_a_class_name(tree):
    text = runlens("audit", tree, "-q", "--workers", "1")
    lines = [ln for ln in text.stdout.splitlines() if ln.startswith("not analyzed: ")]
    assert lines, text.stdout
    for line in lines:
        message = line.split(": ", 2)[2]
        assert "run.json" in message and "Error" not in message, line
    rows = list(csv.DictReader(io.StringIO(runlens("audit", tree, "-q", "--workers", "1", "--format", "csv").stdout)))
    errors = [r["error"] for r in rows if r["error"]]
    assert errors and all("Error:" not in e for e in errors)
    for row in json.loads(runlens("audit", tree, "-q", "--workers", "1", "--format", "json").stdout):
        for finding in row["findings"]:
            if finding["code"] == "unreadable_run":
                assert "Error:" not in finding["title"] and "Error:" not in finding["evidence"]["error"]


def test_an_imported_run_has_an_unknown_duration_not_0s(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {i} loss {2 - i * 0.01:.3f}\n" for i in range(60)))
    assert runlens("import", "text", log, tmp_path / "imported").returncode == 0
    proc = runlens("audit", tmp_path / "imported", log, "--format", "csv", "-q", "--workers", "1")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == 2 and [r["duration_s"] for r in rows] == ["", ""]  # when the import ran is no duration
    assert [r["steps"] for r in rows] == ["60", "60"]
