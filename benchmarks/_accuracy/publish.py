"""Where a benchmark's Markdown page goes: written to its results file and shown on stdout."""

from __future__ import annotations

from pathlib import Path


def publish(text: str, report: Path) -> int:
    """Write ``text`` to ``report`` (creating its folder), print it, and return exit status 0."""
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(text)
    print(text)
    return 0
