"""Which folder a new recorder writes: never a finished run by accident.

A folder that already holds a run (a run.json of any rank, or a part) is
only appended to with ``resume=True`` (a new attempt, as the format's
resumed runs). Otherwise the run goes to the next free versioned sibling,
``runs/exp1-2``, ``runs/exp1-3``, ..., as Lightning's ``version_N`` folders
and W&B's new run per start do, and one stderr line names both folders.
A sibling is claimed by creating it (``mkdir`` is atomic), so two scripts
started together never share one. Under ``torch.distributed`` rank 0
decides and every rank takes its answer (through the process group's
store), so the ranks of one run never split over two folders.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from recorders.format import TABLES, parse_part_name

_RANK_META = re.compile(r"^run(-r\d+)?\.json$")


def holds_run(path: Path) -> bool:
    """Whether ``path`` already has a run in it (metadata of any rank, or any part)."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    if any(_RANK_META.match(n) for n in names):
        return True
    for table in TABLES:
        if table in names:
            try:
                if any(parse_part_name(n) for n in os.listdir(path / table)):
                    return True
            except OSError:
                continue
    return False


def _claim(candidate: Path) -> bool:
    try:
        candidate.mkdir(parents=True)
        return True
    except FileExistsError:  # an empty folder (made by hand, or by a claim that wrote nothing) is free
        try:
            return candidate.is_dir() and not holds_run(candidate) and not any(
                n.startswith(".writer-r") for n in os.listdir(candidate))
        except OSError:
            return False
    except OSError:  # disk full or read-only: the writer makes it once it can write (never raise here)
        return not os.path.lexists(candidate)


def next_free(path: Path, limit: int = 100_000) -> Path:
    """The first ``{name}-{n}`` sibling (n >= 2) holding no run, created here."""
    for n in range(2, limit):
        candidate = path.with_name(f"{path.name}-{n}")
        if _claim(candidate):
            return candidate
    raise OSError(f"runlens: no free version of {path} below -{limit}")


def choose(path: str | Path, resume: bool, rank: int, world: int) -> tuple[Path, str | None]:
    """``(folder to write, message or None)``; the message says a rerun went to a new folder."""
    path = Path(path)
    chosen, message = path, None
    if rank == 0 and not resume and holds_run(path):
        chosen = next_free(path)
        message = (f"runlens: {path} already holds a run; this run is recorded in {chosen} "
                   f"(pass resume=True to continue {path} instead)")
    if world > 1:
        chosen = _shared(path, chosen, rank)
    return chosen, message


_OPENED: dict[str, int] = {}


def _shared(path: Path, chosen: Path, rank: int, wait_s: float = 120.0) -> Path:
    """Rank 0's choice, through the process group's key-value store.

    A store key rather than a collective: a script that records on rank 0 alone must not hang
    waiting for ranks that never open a recorder. The key names the path and how many recorders
    this process opened on it, which is the same on every rank of one job.
    """
    from datetime import timedelta

    try:
        from torch.distributed import distributed_c10d
        store = distributed_c10d._get_default_store()
    except Exception:  # noqa: BLE001 - no store: each rank keeps its own (the old behaviour)
        return chosen
    n = _OPENED[str(path)] = _OPENED.get(str(path), 0) + 1
    key = f"runlens/run_dir/{os.path.abspath(path)}/{n}"
    if rank == 0:
        # torch's stub says str; the C++ store takes bytes too, and bytes carry a non-UTF-8 path unchanged.
        store.set(key, os.fsencode(chosen))  # type: ignore[arg-type]
        return chosen
    try:
        store.wait([key], timedelta(seconds=wait_s))
        return Path(os.fsdecode(store.get(key)))
    except Exception:  # noqa: BLE001 - rank 0 records nothing: write where this rank was told
        return chosen
