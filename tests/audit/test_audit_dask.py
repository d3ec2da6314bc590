"""The Dask path against a real LocalCluster (two worker processes on loopback)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from runlens.audit import audit
from runlens.cli import main

distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=50) as cluster:
        yield cluster


def test_dask_client_gives_the_same_json_as_local(tree, cluster):
    local = audit([tree], workers=1)
    with distributed.Client(cluster) as client:
        remote = audit([tree], client=client)
    assert remote.backend == "dask" and remote.workers == 2
    assert json.dumps(remote.to_list()) == json.dumps(local.to_list())
    assert [r.steps for r in remote.rows] == [r.steps for r in local.rows]


def test_scheduler_option_gives_the_same_output(tree, cluster):
    runner = CliRunner()
    local = runner.invoke(main, ["audit", str(tree), "--format", "json", "-q", "--workers", "1"])
    remote = runner.invoke(main, ["audit", str(tree), "--format", "json", "-q",
                                  "--scheduler", cluster.scheduler_address])
    assert remote.exit_code == local.exit_code == 1
    assert remote.stdout == local.stdout


def test_baseline_on_dask_matches_local(tree, cluster):
    base = tree / "sweep" / "lr-0.01"
    local = audit([tree / "sweep"], workers=1, baseline=base)
    with distributed.Client(cluster) as client:
        remote = audit([tree / "sweep"], client=client, baseline=base)
    assert remote.to_list() == local.to_list()


def test_unreachable_scheduler_is_a_usage_error(tree, monkeypatch):
    monkeypatch.setattr("runlens.audit.dask_backend.CONNECT_TIMEOUT", "2s")
    result = CliRunner().invoke(main, ["audit", str(tree), "-q", "--scheduler", "tcp://127.0.0.1:9"])
    assert result.exit_code == 2 and "Dask scheduler" in result.stderr
