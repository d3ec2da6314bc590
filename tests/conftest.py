"""Fixtures shared by every test package.

Nothing here needs anything beside the checkout: runs are checked with the
project's own validator (``runlens.io.validate``). Tests that read
``../shared`` (the real logs, the reference ``check-runlog``) use
``needs_shared`` and are skipped, with the reason in the summary, in a clone
that has no ``../shared`` beside it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CHECK_RUNLOG = SHARED / "tools" / "check-runlog"
REAL_LOGS = SHARED / "real-logs"

# Two cores are shared by everything: keep torch from oversubscribing them.
os.environ.setdefault("OMP_NUM_THREADS", "1")

needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"{SHARED} is not beside the checkout (real logs, reference checker)")


def _hypothesis_profiles() -> None:
    """No example database in the checkout, so a failure found once cannot stick to later runs;
    derandomized under CI (``.ci/run`` sets ``HYPOTHESIS_PROFILE=ci``) so a run is reproducible."""
    try:
        from hypothesis import settings
        from hypothesis.configuration import set_hypothesis_home_dir
        from hypothesis.database import DirectoryBasedExampleDatabase
    except ImportError:
        return
    outside = Path(tempfile.gettempdir()) / f"runlens-hypothesis-{os.getuid() if hasattr(os, 'getuid') else 0}"
    set_hypothesis_home_dir(str(outside))  # its caches too: nothing of hypothesis's in the checkout
    settings.register_profile("dev", database=DirectoryBasedExampleDatabase(str(outside / "examples")))
    settings.register_profile("ci", database=None, derandomize=True, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


_hypothesis_profiles()


def _check(*runs: os.PathLike | str) -> str:
    """Check ``runs`` with ``runlens.io.validate``; fail the test if any breaks format v1."""
    from runlens.io.validate import validate_run

    lines = []
    for run in runs:
        report = validate_run(run)
        lines += [f"{run}: {v.line()}" for v in report.violations]
    if lines:
        pytest.fail(f"runlens validate rejected {runs}:\n" + "\n".join(lines))
    return f"{len(runs)} of {len(runs)} runs conform to run-log format v1\n"


@pytest.fixture
def check_runlog():
    """``check_runlog(run_dir, ...)``: assert the runs conform to format v1."""
    return _check
