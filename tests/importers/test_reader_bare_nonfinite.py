"""A non-finite loss in any spelling, mid-line, is the loss at that step (issue 19: bare ``nan`` gap).

Each log is written here: a falling loss logged every 10 steps, whose loss turns non-finite
from step ``10 * NAN_ROW`` on, spelled as a trainer prints it, with other fields after it.
"""

from __future__ import annotations

import math

import pytest

from runlens.analysis import analyze
from runlens.io.importers import _lineplan, read
from runlens.io.importers._textline import read_fields

ROWS, NAN_ROW = 60, 41


def _line(step: int, loss: str) -> str:
    return f"step {step} loss {loss} lr 0.001"


SPELLINGS = {
    # name: (the line at a step, given the loss as text; the non-finite loss text)
    "bare nan, then a field": (_line, "nan"),
    "colon comma": (lambda s, v: f"step: {s}, loss: {v}, lr: 1e-3", "nan"),
    "equals minus nan": (lambda s, v: f"step={s} loss={v} lr=1e-3", "-nan"),
    "paddle nanxxx": (_line, "nanxxx"),
    "msvc qnan": (_line, "1.#QNAN"),
    "msvc ind": (_line, "-1.#IND"),
    "msvc inf": (_line, "1.#INF"),
    "torch tensor": (lambda s, v: f"step {s} loss tensor({v}, device='cuda:0') lr 0.001", "nan"),
    "torch tensor bare": (lambda s, v: f"step {s} loss tensor({v}) lr 0.001", "nan"),
    "capital NaN mid-line": (lambda s, v: f"step {s} | loss {v} | grad_norm 1.5 | lr 0.001", "NaN"),
    "inf then a field": (_line, "inf"),
}


def _write(tmp_path, name: str):
    line, bad = SPELLINGS[name]
    rows = [line(10 * i, bad if i >= NAN_ROW else f"{2.5 * math.exp(-i / 20) + 0.3:.4f}") for i in range(ROWS)]
    path = tmp_path / "train.log"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling_is_a_nonfinite_loss_at_its_step(tmp_path, name):
    imp = read("text", _write(tmp_path, name))
    loss = imp.train["loss"]
    assert [int(s) for s in loss.steps] == [10 * i for i in range(ROWS)]
    bad = [int(s) for s, v in zip(loss.steps, loss.values, strict=True) if not math.isfinite(v)]
    assert bad == [10 * i for i in range(NAN_ROW, ROWS)]
    assert math.isclose(float(loss.values[0]), 2.8)
    # The field after the loss is still its own column, not glued to the loss's name.
    assert [float(v) for v in imp.train["lr"].values] == [0.001] * ROWS
    assert set(imp.train) <= {"loss", "lr", "grad_norm"}


@pytest.mark.parametrize("name", ["bare nan, then a field", "msvc qnan", "torch tensor"])
def test_the_shape_cache_reads_them_as_the_full_parser_does(tmp_path, monkeypatch, name):
    path = _write(tmp_path, name)
    cached = read("text", path).train["loss"]
    monkeypatch.setattr(_lineplan, "MAX_SHAPES", 0)
    full = read("text", path).train["loss"]
    assert list(cached.steps) == list(full.steps)
    assert [repr(float(v)) for v in cached.values] == [repr(float(v)) for v in full.values]


@pytest.mark.parametrize("name", ["bare nan, then a field", "msvc ind", "torch tensor"])
def test_analysis_fires_nonfinite_loss_at_the_logged_step(tmp_path, name):
    d = analyze(str(_write(tmp_path, name)))
    hits = [f for f in d.findings if f.code == "nonfinite_loss"]
    assert hits, [f.code for f in d.findings]
    assert hits[0].step == 10 * NAN_ROW


def test_a_finite_twin_has_no_nonfinite_loss(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("".join(_line(10 * i, f"{2.5 * math.exp(-i / 20) + 0.3:.4f}") + "\n" for i in range(ROWS)))
    assert "nonfinite_loss" not in {f.code for f in analyze(str(path)).findings}


@pytest.mark.parametrize("text, fields", [
    # A bare word after prose is part of a name, as before.
    ("number of nan iterations: 0 | loss 2.5", [("number of nan iterations", 0.0), ("loss", 2.5)]),
    ("loss nan grad_norm inf lr 0.1", [("loss", math.nan), ("grad_norm", math.inf), ("lr", 0.1)]),
    ("loss tensor(2.5000, device='cuda:0', grad_fn=<NllLossBackward0>) acc 0.5", [("loss", 2.5), ("acc", 0.5)]),
    ("loss: 1.#INF, lr: 0.1", [("loss", math.inf), ("lr", 0.1)]),
])
def test_fields_around_a_bare_word(text, fields):
    got = read_fields(text)
    assert [k for k, _ in got] == [k for k, _ in fields]
    assert [repr(v) for _, v in got] == [repr(v) for _, v in fields]
