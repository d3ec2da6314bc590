"""``runlens analyze URL``: a run or a log named by its URL is staged and read like a local one."""

from __future__ import annotations

import functools
import http.server
import math
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from runlens.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(tmp_path):
    pytest.importorskip("aiohttp")
    log = tmp_path / "train.csv"
    log.write_text("step,loss\n" + "".join(
        f"{i},{2.3 * math.exp(-i / 50) if i < 150 else float('nan')}\n" for i in range(200)))
    handler = functools.partial(_Quiet, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_a_log_named_by_an_http_url_is_analyzed(served):
    res = CliRunner().invoke(main, ["analyze", f"{served}/train.csv", "--format", "json"])
    assert res.exit_code == 1, res.output  # the loss became NaN: an error finding
    assert '"curve": "diverged"' in res.output and f'"run": "{served}/train.csv"' in res.output


def test_a_missing_url_is_one_line_and_exit_2(served):
    res = CliRunner().invoke(main, ["analyze", f"{served}/nope.csv"])
    assert res.exit_code == 2 and "no such file or directory" in res.output


def test_a_run_folder_named_by_a_file_url(tmp_path):
    shutil.copytree(ROOT / "sample_runs" / "nan_divergence", tmp_path / "run")
    res = CliRunner().invoke(main, ["analyze", f"file://{tmp_path / 'run'}", "-q"])
    assert res.exit_code == 1 and "Diverged" in res.output
