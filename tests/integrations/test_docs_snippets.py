"""The python blocks of docs/integrations/*.md run as written, in order, in an empty folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import runlens

DOCS = Path(__file__).resolve().parents[2] / "docs" / "integrations"
PAGES = {"lightning.md": "lightning", "huggingface.md": "transformers", "importers.md": "tensorboard"}
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(page: str) -> list[str]:
    return BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_snippets_run_and_write_valid_runs(page, tmp_path, monkeypatch, check_runlog):
    pytest.importorskip(PAGES[page])
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    code = blocks(page)
    assert code, f"{page} has no python blocks"
    namespace: dict = {"__name__": "__docs__"}
    for i, block in enumerate(code):
        exec(compile(block, f"{page}[block {i}]", "exec"), namespace)  # noqa: S102 - the docs are ours
    runs = sorted(p for p in (tmp_path / "runs").iterdir() if (p / "run.json").exists())
    assert runs, f"{page} wrote no run"
    check_runlog(*runs)
    for run in runs:
        d = runlens.analyze(run).to_dict()
        assert d["status"] in ("finished", "crashed"), (run, d["status"])
        assert d["curve"] in ("healthy", "underfitting", "insufficient_data", "overfitting", "unstable"), run


def test_every_page_names_its_one_line():
    assert "callbacks=[RunlensCallback(" in (DOCS / "lightning.md").read_text()
    assert "callbacks=[RunlensCallback(" in (DOCS / "huggingface.md").read_text()
    text = (DOCS / "importers.md").read_text()
    for kind in ("tensorboard", "lightning-csv", "hf", "csv", "text"):
        assert f"`{kind}`" in text
