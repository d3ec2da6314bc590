"""A listing that fell between a compaction's write and its removals.

The stress case (``round3_cases``: 100 reads racing compaction) finds this
only under load; here the stale listing is handed to the loader on purpose:
taken before the compaction, used after it, so every part it names is gone
and the merged part holding their rows is not in it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from recorders import _parts
from runlens.io import _listing
from runlens.io.loader import load_run

from ._compacting_writer import meta, tables


def _run(tmp_path: Path, parts: int) -> Path:
    import json

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps(meta()), encoding="utf-8")
    for k in range(parts):
        for name, table in zip(("scalars", "events"), tables(k * 5), strict=True):
            _parts.write_part(run / name, 0, k, table)
    return run


def test_a_listing_taken_before_compaction_and_read_after_loses_no_row(tmp_path, monkeypatch):
    run = _run(tmp_path, parts=6)
    stale = {t: sorted((run / t).iterdir()) for t in ("scalars", "events")}
    for t in stale:
        _parts.compact(run / t, t, 0, 6, target_rows=60)
    real = _listing._stable_listing
    served: set[str] = set()

    def once_stale(folder: Path) -> list[Path]:
        # The first listing of each table is the one taken before the compaction.
        if folder.name not in served:
            served.add(folder.name)
            return stale[folder.name]
        return real(folder)

    monkeypatch.setattr(_listing, "_stable_listing", once_stale)
    got = load_run(run, columns={"scalars": None, "events": None})
    assert served == {"scalars", "events"}, "the stale listing was never served: the test proves nothing"
    for t in ("scalars", "events"):
        steps = np.asarray(getattr(got, t).column("step"), dtype=np.int64)
        assert sorted(steps.tolist()) == list(range(30)), t
    assert got.warnings == ()
