"""``unreadable_data``: a truncated part is an error and the curve says what it lacks."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner
from verdict_fixtures import ROOT, codes

from runlens.analysis import analyze
from runlens.cli import main


@pytest.fixture()
def copy(tmp_path):
    dst = tmp_path / "run"
    shutil.copytree(ROOT / "val_ok", dst)
    return dst


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def test_a_truncated_scalars_part_is_an_error_and_the_curve_names_it(copy):
    for part in (copy / "scalars").glob("*.parquet"):
        truncate(part)
    d = analyze(copy)
    assert "unreadable_data" in codes(d, "error")
    assert d.curve.label == "insufficient_data"
    assert "could not be read" in d.curve.reason and "no training step was logged" not in d.curve.reason


def test_a_truncated_layers_part_is_an_error_too(copy):
    truncate(next((copy / "layers").glob("*.parquet")))
    (f,) = [f for f in analyze(copy).findings if f.code == "unreadable_data"]
    assert f.evidence["tables"] == ["layers"]


def test_fail_on_error_exits_non_zero(copy):
    truncate(next((copy / "scalars").glob("*.parquet")))
    result = CliRunner().invoke(main, ["analyze", str(copy), "--fail-on", "error"])
    assert result.exit_code == 1, result.output


def test_silent_twin_an_intact_copy(copy):
    d = analyze(copy)
    assert "unreadable_data" not in {f.code for f in d.findings}
    result = CliRunner().invoke(main, ["analyze", str(copy), "--fail-on", "error"])
    assert result.exit_code == 0, result.output
