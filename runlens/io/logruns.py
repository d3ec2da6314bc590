"""The runs of one source, read once: another tool's log holding several runs is parsed a single time.

A console log of seven launches, or a CSV whose step counter starts again,
holds several runs; ``runlens analyze``, ``report`` and ``audit`` judge each.
Opening the source (:func:`~runlens.io.loader.load_runs`) parses it; each
run is then built from that parse when asked for, one at a time, so a caller
that judges the runs in turn holds the parse and one run's tables, never a
second parse nor every run's tables at once.

This module also reads another tool's log (:func:`read_foreign`): which
importer reads it, and errors in one line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from runlens.errors import RunFormatError, RunlensError
from runlens.io.bounded import special_kind
from runlens.io.runmeta import one_line

if TYPE_CHECKING:
    from runlens.io.importers._common import Take
    from runlens.io.importers.sniff import Sniff
    from runlens.io.run import Run

T = TypeVar("T")


class LogRuns:
    """The runs of one source, read once.

    ``run()`` is the run :func:`~runlens.io.loader.load_run` gives for the source and the import
    options it was opened with; ``run(i)`` is the run it gives with ``run=i`` added to them, built
    from the same read (messages included: run ``i`` says it was picked "as asked").

    ``from_log``: the source is another tool's log, parsed here, so its ``config["import_runs"]``
    counts the runs in it. A run directory holds one run whatever that key says: ``runlens import``
    keeps it there as provenance (which run of the log was imported), not as a count to judge.
    """

    def __init__(self, build: Callable[[int | None], Run], *, from_log: bool = False) -> None:
        self._build = build
        self.from_log = from_log
        self._kept: dict[int, Run] = {}

    def run(self, index: int | None = None) -> Run:
        if index is not None and index in self._kept:
            return self._kept.pop(index)
        return self._build(index)

    def in_turn(self, counted: Run, n: int) -> list[int]:
        """The indices 1..``n`` in the order a caller judging each run builds them: the run read by
        default (``counted``, built to count the runs) is its own index's and comes first, and
        ``run(i)`` hands it out for that index once instead of building it again. A caller that drops
        its own reference to ``counted`` lets it go as soon as that index is done."""
        read = read_in_log(counted.meta.get("config"), n)
        if read is not None:
            self._kept[read] = counted
        return sorted(range(1, n + 1), key=lambda k: k != read)

    def renamed(self, rename: Callable[[Run], Run]) -> LogRuns:
        """The same runs, each passed through ``rename`` (a staged URL shown as the URL)."""
        build = self._build
        return LogRuns(lambda index: rename(build(index)), from_log=self.from_log)


def runs_in_log(config: object) -> int:
    """How many runs the importer told apart in the source a run's ``config`` came from (1: one):
    ``config["import_runs"]["count"]``, which every importer that splits a source writes. Only for a
    run read from a log (``LogRuns.from_log``): a run directory holds one run, whatever it says."""
    runs = config.get("import_runs") if isinstance(config, dict) else None
    count = runs.get("count") if isinstance(runs, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 1 else 1


def read_in_log(config: object, n: int) -> int | None:
    """Which of the log's ``n`` runs (1-based) the run read by default is: ``config["import_runs"]["read"]``,
    or None when the importer did not say."""
    runs = config.get("import_runs") if isinstance(config, dict) else None
    read = runs.get("read") if isinstance(runs, dict) else None
    return read if isinstance(read, int) and not isinstance(read, bool) and 1 <= read <= n else None


def split_note(config: object) -> str | None:
    """The import warning in which the importer said it split the source (a caller that lists or
    audits every run says so in its own words instead)."""
    runs = config.get("import_runs") if isinstance(config, dict) else None
    note = runs.get("note") if isinstance(runs, dict) else None
    return note if isinstance(note, str) and note else None


def without_split_note(warnings: tuple[str, ...], config: object) -> tuple[str, ...]:
    """``warnings`` less the importer's note that it split the source (``split_note``), for a caller
    that says which run this is in its own words."""
    note = split_note(config)
    return tuple(w for w in warnings if not (note and w.endswith(note)))


def read_foreign(shown: str, columns: Mapping[str, Any] | None,
                 options: Mapping[str, Any] | None = None) -> LogRuns:
    """The runs of another tool's log at ``shown``, parsed here, each built when asked for."""
    if not os.path.exists(shown):
        raise RunFormatError(f"{shown}: no such file or directory")
    kind = special_kind(os.stat(shown).st_mode)
    if kind is not None and kind != "a folder":
        raise RunFormatError(f"{shown}: is {kind}, not a regular file; refusing to read it")
    found: Sniff | None = None
    try:
        from runlens.io.importers.sniff import sniff
    except (ImportError, AttributeError):
        pass
    else:
        try:
            found = sniff(shown)
        except OSError as exc:
            raise RunFormatError(f"{shown}: cannot be read ({one_line(exc)})") from None
    kind = found.kind if found is not None else None
    if not kind and options and found is not None and found.reason.startswith("no line"):
        kind = "text"  # the user named the step/loss fields: read it as a console log with them
    elif not kind and options and found is not None and "table" in found.found:
        kind = "table"  # a table whose columns say no loss: the user named its columns
    if not kind:
        why = f": {found.reason}" if found is not None and found.reason else ""
        raise RunFormatError(f"{shown} is not a run directory (no run.json) "
                             f"and no importer recognises it{why}")
    return _parsed(shown, kind, columns, dict(options or {}))


def _parsed(shown: str, kind: str, columns: Mapping[str, Any] | None, options: dict[str, Any]) -> LogRuns:
    def parse() -> Take:
        from runlens.io.importers import parse_runs

        return parse_runs(kind, shown, **options)

    def build(take: Take, index: int | None) -> Run:
        from runlens.io.importers.memory import to_run

        return to_run(take(index), shown, columns)  # in memory: no run is written and read back

    take = _one_line_errors(shown, kind, parse)
    return LogRuns(lambda index: _one_line_errors(shown, kind, lambda: build(take, index)), from_log=True)


def _one_line_errors(shown: str, kind: str, work: Callable[[], T]) -> T:
    try:
        return work()
    except RunlensError:
        raise
    except Exception as exc:  # noqa: BLE001 - a broken log must end in one line, not a traceback
        raise RunFormatError(f"{shown}: the {kind} importer failed "
                             f"({type(exc).__name__}: {one_line(exc)})") from None


__all__ = ["LogRuns", "read_foreign", "read_in_log", "runs_in_log", "split_note", "without_split_note"]
