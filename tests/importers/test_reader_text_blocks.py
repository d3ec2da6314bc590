"""Runs of lines read as arrays (``_textblock``) give what the line-by-line reader gives.

Each log is written here with what stresses the run path: restarts of the step inside a block,
validation lines between training lines, runs of spaces and tabs, runs shorter than a block and
longer than one, lines cut at ``_MAX_LINE``, a step too long for an int64, an ``Epoch 1/N`` header.
The same log is read with blocks of a few hundred characters (runs cross block ends), by pyarrow's
RE2 or by Python's ``re``, and with the shape cache off (every line parsed in full); the results
must be identical.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

from runlens.io.importers import _lineplan, _textblock, text


def _loss(i: int) -> str:
    return "nan" if i % 97 == 96 else f"{2.0 * math.exp(-i / 300) + 0.1:.5f}"


def restarts(path):
    rows = []
    for run in range(3):
        for i in range(400 + 50 * run):
            rows.append(f"step {i} | loss {_loss(i)} | lr {1e-3 * (run + 1):g} | grad_norm {1 + i % 5}")
            if i % 100 == 99:
                rows.append(f"step {i} | val_loss {_loss(i)}")
    path.write_text("\n".join(rows) + "\n")


def spaces_and_tabs(path):
    rows = [f"  step\t{i}  loss   {_loss(i)} \tlr {3e-4:g}\t " if i % 3 else f"step {i} loss {_loss(i)} lr 0.0003"
            for i in range(600)]
    path.write_text("\n".join(rows))  # no newline at the end


def mixed_shapes(path):
    rows = []
    for i in range(900):
        if i % 250 == 0:
            rows.append(f"Epoch {1 + i // 250}/4")
        rows.append(f"iter {i}: loss {_loss(i)}, acc {i % 7 / 7:.3f}" if (i // 40) % 2 else
                    f"iter {i} loss={_loss(i)} time 12.{i % 10}ms")
        if i % 111 == 0:
            rows.append("WARNING: loss is nan, skipping batch")
    path.write_text("\r\n".join(rows) + "\r\n")


def huge_step(path):
    rows = [f"step {i} loss {_loss(i)}" for i in range(100)]
    rows += [f"step {10 ** 19 + i} loss 1.0" for i in range(50)]
    rows += [f"step {100 + i} loss {_loss(i)}" for i in range(100)]
    path.write_text("\n".join(rows) + "\n")


def long_lines(path):
    rows = [f"step {i} loss {_loss(i)} note {'x' * (i % 7) * 40}" for i in range(300)]
    path.write_text("\n".join(rows) + "\n")


LOGS = [restarts, spaces_and_tabs, mixed_shapes, huge_step, long_lines]


def _read(path):
    return text.read(path)


def _same(a, b) -> None:
    assert a.warnings == b.warnings and a.config == b.config and a.events == b.events
    for table in ("train", "evals"):
        x, y = getattr(a, table), getattr(b, table)
        assert list(x) == list(y)
        for k in x:
            np.testing.assert_array_equal(x[k].steps, y[k].steps)
            np.testing.assert_array_equal(x[k].values, y[k].values)


@pytest.mark.parametrize("make", LOGS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("block", [300, 4096, _textblock.BLOCK_CHARS])
@pytest.mark.parametrize("engine", ["arrow", "re"])
def test_runs_read_as_arrays_match_the_full_parse(tmp_path, monkeypatch, make, block, engine):
    path = tmp_path / "train.log"
    make(path)
    if engine == "re":  # the path taken where pyarrow cannot search or cast a block
        monkeypatch.setattr(_textblock.Matcher, "_search_arrow", lambda self, plan: None)
    if make is long_lines:
        monkeypatch.setattr(text, "_MAX_LINE", 120)
    monkeypatch.setattr(_textblock, "BLOCK_CHARS", block)
    monkeypatch.setattr(_textblock.blocks, "__defaults__", (block,))
    fast = _read(path)
    monkeypatch.setattr(_lineplan, "MAX_SHAPES", 0)
    _same(fast, _read(path))


def test_the_run_path_is_taken(tmp_path, monkeypatch):
    path = tmp_path / "train.log"
    restarts(path)
    taken = []
    real = text._Scanner._run

    def spy(self, plan, i, k):
        got = real(self, plan, i, k)
        taken.append(got)
        return got

    monkeypatch.setattr(text._Scanner, "_run", spy)
    imp = text.read(path)
    assert sum(taken) > 0.9 * 1350  # nearly every training line went as part of a run
    assert imp.config["text_lines"]["runs"] == 3
    assert [int(s) for s in imp.train["loss"].steps] == list(range(500))


@pytest.mark.parametrize("content", ["a\nbb\n\nccc", "x" * 25 + "\n" + "y" * 10, "z" * 10 + "\n", "\n\n", "q" * 31])
@pytest.mark.parametrize("size", [3, 7, 64])
def test_blocks_cut_lines_as_readline_does(content, size):
    limit = 10
    want = []
    f = io.StringIO(content)
    while piece := f.readline(limit):
        want.append(piece.rstrip("\n"))
    got = [ln for block in _textblock.blocks(io.StringIO(content), limit, size) for ln in block]
    assert got == want
