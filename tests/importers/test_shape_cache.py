"""The line-shape cache is only a speed-up: with it and without it the reader gives the same result."""

from __future__ import annotations

from pathlib import Path

import logmaker
import numpy as np
import pytest

from runlens.errors import ImportFailedError
from runlens.io.importers import _lineplan, text

REAL_LOGS = Path(__file__).resolve().parents[3] / "shared" / "real-logs"


def both(path, monkeypatch, **options):
    out = []
    for limit in (_lineplan.MAX_SHAPES, 0):
        monkeypatch.setattr(_lineplan, "MAX_SHAPES", limit)
        try:
            out.append(text.read(path, **options))
        except ImportFailedError as exc:
            out.append(str(exc))
    return out


def same(a, b) -> None:
    assert type(a) is type(b)
    if isinstance(a, str):
        assert a == b
        return
    assert a.warnings == b.warnings and a.config == b.config
    for table in ("train", "evals"):
        x, y = getattr(a, table), getattr(b, table)
        assert set(x) == set(y)
        for k in x:
            np.testing.assert_array_equal(x[k].steps, y[k].steps)
            np.testing.assert_array_equal(x[k].values, y[k].values)  # NaN == NaN here


def made(tmp_path):
    paths = [logmaker.nanogpt(tmp_path), logmaker.keras_console(tmp_path, runs=2), logmaker.mmengine(tmp_path),
             logmaker.megatron_no_loss(tmp_path)]
    return paths + list(logmaker.misc_dialects(tmp_path).values())


def test_cache_and_full_parse_agree_on_the_fixtures(tmp_path, monkeypatch):
    for path in made(tmp_path):
        same(*both(path, monkeypatch))


def test_cache_is_used(tmp_path, monkeypatch):
    path = logmaker.mmengine(tmp_path)
    seen = []
    real = _lineplan.Parser.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        seen.append(self)

    monkeypatch.setattr(_lineplan.Parser, "__init__", spy)
    text.read(path)
    assert seen[0].misses == 1 and seen[0].hits == logmaker.N - 1


REAL = sorted(p for p in REAL_LOGS.rglob("*") if p.is_file() and p.suffix in (".txt", ".log", ".out", ".md")) \
    if REAL_LOGS.is_dir() else []


@pytest.mark.skipif(not REAL, reason=f"{REAL_LOGS} is not beside the checkout")
def test_cache_and_full_parse_agree_on_the_real_logs(monkeypatch):
    for path in REAL:
        same(*both(path, monkeypatch))
