"""Each key number has one definition: the key numbers of every sample run in ``audit``'s and
``compare``'s JSON equal the ones in ``analyze``'s JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from runlens.cli import main
from runlens.compare import compare_runs

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"
RUNS = sorted(p.name for p in SAMPLES.iterdir() if (p / "run.json").is_file()) if SAMPLES.is_dir() else []
pytestmark = pytest.mark.skipif(not RUNS, reason="sample_runs/ not generated")


def _json(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def _same(a: dict, b: dict) -> bool:
    # Strict JSON on both sides (no NaN): plain equality, key by key and in the same order.
    return list(a.items()) == list(b.items())


@pytest.fixture(scope="module")
def analyzed() -> dict[str, dict]:
    return {Path(obj["run"]).name: obj["key_numbers"]
            for obj in _json("analyze", *(str(SAMPLES / n) for n in RUNS), "--format", "json")}


def test_every_sample_run_has_key_numbers(analyzed):
    assert sorted(analyzed) == RUNS
    assert all(numbers for numbers in analyzed.values())


def test_audit_json_shows_analyze_key_numbers(analyzed):
    rows = _json("audit", str(SAMPLES), "--format", "json", "--workers", "1")
    audited = {Path(row["run"]).name: row["key_numbers"] for row in rows}
    assert sorted(audited) == RUNS
    for name in RUNS:
        assert _same(audited[name], analyzed[name]), name


@pytest.mark.parametrize("name", RUNS)
def test_compare_json_shows_analyze_key_numbers(analyzed, name):
    # The CLI refuses a pair that shares no training step (crash_at_start logged none): the JSON it
    # would print is the comparison's to_dict, strict JSON.
    c = compare_runs(str(SAMPLES / name), str(SAMPLES / "healthy"))
    obj = json.loads(json.dumps(c.to_dict(), allow_nan=False))
    assert _same(obj["key_numbers"]["run"], analyzed[name])
    assert _same(obj["key_numbers"]["baseline"], analyzed["healthy"])
    if c.shared_steps:
        assert _json("compare", str(SAMPLES / name), str(SAMPLES / "healthy"), "--format", "json") == obj
