"""The recorder never stops training (issue 23.5): a full or unwritable disk from the start or mid-run is
one warning; rows wait in memory (bounded by ``max_pending_rows`` per table) and are written once space
returns; what did not fit is counted in run.json ``rows_dropped``."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from recorder_testutil import meta, read_table

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from recorders import _lock, _meta, _parts  # noqa: E402
from recorders.torch import Recorder  # noqa: E402


class Disk:
    """Every write under ``root`` fails with ENOSPC while ``full`` is set (parts, run.json, folders, marker)."""

    def __init__(self, monkeypatch, root: Path) -> None:
        self.full = True
        self.root = str(root)
        real_part, real_json, real_mkdir = _parts.write_part, _meta.atomic_write_json, Path.mkdir
        real_create = _lock.WriterLock._create

        def fail(path) -> None:
            if self.full and str(path).startswith(self.root):
                raise OSError(errno.ENOSPC, "No space left on device", str(path))

        def write_part(folder, *a, **kw):
            fail(folder)
            return real_part(folder, *a, **kw)

        def atomic_write_json(path, *a, **kw):
            fail(path)
            return real_json(path, *a, **kw)

        def mkdir(path, *a, **kw):
            fail(path)
            return real_mkdir(path, *a, **kw)

        def create(lock):
            fail(lock.path)
            return real_create(lock)

        monkeypatch.setattr(_parts, "write_part", write_part)
        monkeypatch.setattr(_meta, "atomic_write_json", atomic_write_json)
        monkeypatch.setattr(Path, "mkdir", mkdir)
        monkeypatch.setattr(_lock.WriterLock, "_create", create)


def _steps(rec, model, opt, n: int) -> None:
    for _ in range(n):
        opt.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        rec.step(loss)


def _model():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    return model, torch.optim.SGD(model.parameters(), lr=0.05)


def _runlens_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if "runlens" in str(w.message)]


@pytest.mark.parametrize("full_at", [0, 10])
def test_a_full_disk_never_stops_training_and_loses_nothing_within_the_bound(tmp_path, monkeypatch, full_at):
    disk = Disk(monkeypatch, tmp_path)
    disk.full = full_at == 0
    model, opt = _model()
    run = tmp_path / "runs" / "exp"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = Recorder(run, model, opt, flush_every=5, flush_seconds=0.05, handle_signals=False, announce=False)
        _steps(rec, model, opt, 10)
        disk.full = True
        _steps(rec, model, opt, 20)
        assert rec.writer.flush(timeout=30) is not None
        disk.full = False
        _steps(rec, model, opt, 10)
        rec.close()
    said = _runlens_warnings(caught)
    assert len(said) == 1 and "No space left" in said[0], said
    assert read_table(run, "scalars").column("step").to_pylist() == list(range(40))
    m = meta(run)
    assert m["status"] == "finished" and not m.get("rows_dropped")
    events = read_table(run, "events").column("message").to_pylist()
    assert any("written late" in msg for msg in events), events


def test_rows_beyond_the_bound_are_counted_in_run_json(tmp_path, monkeypatch):
    disk = Disk(monkeypatch, tmp_path)
    model, opt = _model()
    run = tmp_path / "exp"
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        rec = Recorder(run, model, opt, flush_every=5, flush_seconds=0.05, handle_signals=False, announce=False,
                       layers_every=10 ** 6)
        rec.writer.max_pending_rows = 12
        _steps(rec, model, opt, 40)
        rec.writer.flush(timeout=30)
        disk.full = False
        _steps(rec, model, opt, 5)
        rec.close()
    steps = read_table(run, "scalars").column("step").to_pylist()
    dropped = meta(run)["rows_dropped"]
    assert dropped["scalars"] > 0
    assert len(steps) + dropped["scalars"] == 45  # every row is either on disk or counted as lost
    assert steps == sorted(steps) and steps[-5:] == list(range(40, 45))  # the oldest rows went first


def _tmpfs(mnt: Path, size: str) -> bool:
    mnt.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                          capture_output=True).returncode == 0


def test_a_real_full_filesystem_from_the_start(tmp_path):
    """ENOSPC from a real (tiny, filled) tmpfs, where mounting one is allowed (root)."""
    mnt = tmp_path / "mnt"
    if not _tmpfs(mnt, "256k"):
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    try:
        filler = mnt / "filler"
        with open(filler, "wb") as f, pytest.raises(OSError):
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        model, opt = _model()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rec = Recorder(mnt / "exp", model, opt, flush_every=5, flush_seconds=0.05, handle_signals=False,
                           announce=False, layers_every=10 ** 6)
            _steps(rec, model, opt, 20)
            rec.writer.flush(timeout=30)
            filler.unlink()
            _steps(rec, model, opt, 10)
            rec.close()
        assert len(_runlens_warnings(caught)) == 1, _runlens_warnings(caught)
        assert read_table(mnt / "exp", "scalars").column("step").to_pylist() == list(range(30))
        assert meta(mnt / "exp")["status"] == "finished"
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
