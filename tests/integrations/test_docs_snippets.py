"""The python blocks of README.md and docs/integrations/*.md run as written, in order, in an empty
folder, and train long enough for the analysis to reach a verdict on the runs they write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import runlens

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "integrations"
PAGES = {"lightning.md": "lightning", "huggingface.md": "transformers", "importers.md": "tensorboard"}
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(page: str, folder: Path = DOCS) -> list[str]:
    return BLOCK.findall((folder / page).read_text(encoding="utf-8"))


def _verdicts(tmp_path: Path, check_runlog) -> list[dict]:
    runs = sorted(p for p in (tmp_path / "runs").iterdir() if (p / "run.json").exists())
    assert runs, "the snippets wrote no run"
    check_runlog(*runs)
    out = []
    for run in runs:
        d = runlens.analyze(run).to_dict()
        # Long enough to judge: a snippet that trains a handful of steps teaches nothing.
        assert d["curve"] != "insufficient_data", (run, d)
        out.append(d)
    return out


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
    for d in _verdicts(tmp_path, check_runlog):
        assert d["status"] in ("finished", "crashed"), d
        assert d["curve"] in ("healthy", "underfitting", "overfitting", "unstable"), d


def test_readme_snippets_run_as_written(tmp_path, monkeypatch, check_runlog):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = blocks("README.md", ROOT)
    assert len(code) >= 2, "README.md lost its recording script or its API example"
    assert '# pip install ".[torch]"' in code[0]  # the install line is part of the script
    namespace: dict = {"__name__": "__readme__"}
    for i, block in enumerate(code):
        exec(compile(block, f"README.md[block {i}]", "exec"), namespace)  # noqa: S102 - our README
    (d,) = _verdicts(tmp_path, check_runlog)
    assert d["status"] == "finished" and d["curve"] == "healthy", d
    assert sorted(p.suffix for p in (tmp_path / "out").iterdir()) == [".html", ".md"]
    # Exactly two quickstart commands: the main job and the test suite.
    quick = text[text.index("## Quickstart"):text.index("## Record a run")]
    commands = re.findall(r"^```bash\n(.*?)^```", quick, re.MULTILINE | re.DOTALL)
    assert [c.strip() for c in commands][1] == "bash .ci/run" and len(commands) == 2
    assert "sample_runs/" in commands[0]


def test_every_page_names_its_one_line():
    assert "callbacks=[RunlensCallback(" in (DOCS / "lightning.md").read_text()
    assert "callbacks=[RunlensCallback(" in (DOCS / "huggingface.md").read_text()
    text = (DOCS / "importers.md").read_text()
    for kind in ("tensorboard", "lightning-csv", "hf", "csv", "text"):
        assert f"`{kind}`" in text
