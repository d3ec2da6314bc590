"""``runlens analyze RUN...``: diagnose runs and print the diagnosis as text or JSON."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

import click

from runlens.cli.common import (
    color_option,
    detector_options,
    detector_settings,
    expand_runs,
    fail_on_option,
    judge,
    refuse_both,
    run_counts,
    skip_loose,
    use_color,
    verbosity_options,
)
from runlens.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from runlens.diagnosis import Diagnosis


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text for a terminal; json for the analysis object of docs/format.md "
                   "(a list of them when there are several runs)")
@fail_on_option()
@detector_options
@color_option
@click.option("--step", "step_key", help="another tool's log: the field that holds the training step")
@click.option("--loss", "loss_key", help="another tool's log: the field that holds the training loss")
@click.option("--val-loss", "val_loss_key", help="another tool's log: the field that holds the validation loss")
@click.option("--run", "run_index", type=click.IntRange(min=1),
              help="a log holding several runs: analyze run N (1-based; default: judge each run "
                   "and show the worst, listing the others)")
@verbosity_options
def analyze(runs: tuple[str, ...], fmt: str, fail_on: str, settings: tuple[str, ...],
            config_file: str | None, color: str, step_key: str | None = None, loss_key: str | None = None,
            val_loss_key: str | None = None, run_index: int | None = None, quiet: bool = False,
            verbose: bool = False) -> None:
    """Diagnose each run RUN: a run directory, another tool's log, or a folder of runs.

    Prints the verdict (what went wrong, from which step, and the likely
    cause), the key numbers, and each finding with what to try; -v adds the
    evidence behind each finding, -q prints the verdict line only.

    \b
    Examples:
      runlens analyze runs/exp1
      runlens analyze runs/exp1 -v
      runlens analyze runs/ --format json > diagnoses.json
      runlens analyze runs/exp1 --set loss_spikes.z_min=8 --fail-on warning
    """
    refuse_both(quiet, verbose)
    detectors = detector_settings(settings, config_file)
    loose: set[str] = set()
    paths, several = expand_runs(runs, loose)
    options = {k: v for k, v in dict(step=step_key, loss=loss_key, val_loss=val_loss_key,
                                     run=run_index).items() if v is not None}
    if options:
        refuse_import_options(options, paths)
    use_system_allocator()
    judged, unread = _judge_all(paths, options, detectors, loose)
    if not judged:
        raise UsageError(f"{', '.join(runs)}: no run could be read (the logs found are named above)")
    diagnoses = [d for d, _ in judged]
    if fmt == "json":
        objects = [with_runs_in_file(d.to_dict(), entries) for d, entries in judged]
        click.echo(json.dumps(objects if several else objects[0], indent=2))
    else:
        from runlens.render.report.text import render
        from runlens.report_data import evidence_of

        painted = use_color(color)
        text = "\n".join(render(d, color=painted, verbose=verbose, quiet=quiet,
                                evidence=evidence_of(d) if verbose else None) for d in diagnoses)
        click.echo(text.replace("\n\n", "\n") if quiet else text, nl=False, color=painted)
    if several and not quiet:
        click.echo(f"runlens: {run_counts(d.worst_severity for d in diagnoses)}", err=True)
    if unread:
        sys.exit(2)  # a named input that could not be read is bad input, whatever the others show
    if any(d.reaches(fail_on) for d in diagnoses):
        sys.exit(1)


def _judge_all(paths: list[str], options: dict, detectors: list | None, loose: set[str],
               ) -> tuple[list[tuple[Diagnosis, list[dict] | None]], list[str]]:
    """Each path judged; of several named, one that cannot be read is named on stderr and the others are
    still judged (their diagnoses are not lost to it), the caller exiting 2 at the end. One path alone
    fails as it is (its one-line error)."""
    from runlens.errors import RunlensError

    judged, unread = [], []
    for path in paths:
        try:
            j = _judge(path, options, detectors, path in loose)
        except RunlensError as exc:
            if len(paths) == 1 or isinstance(exc, UsageError):
                raise
            skip_loose(path, exc, "could not read")
            unread.append(path)
            continue
        if j is not None:
            judged.append(j)
    return judged, unread


def _judge(path: str, options: dict, detectors: list | None, loose: bool = False,
           ) -> tuple[Diagnosis, list[dict] | None] | None:
    """A run directory is read with the detectors' projection only; a log is read whole, since
    the importer builds every column anyway, and every run in it is judged (``judge``). A loose
    log found in a folder that cannot be read is named and left out (None)."""
    from pathlib import Path

    from runlens.analysis import analyze as run_analysis
    from runlens.errors import RunlensError

    if (Path(path) / "run.json").is_file():
        return run_analysis(path, detectors=detectors), None
    try:
        diagnosis, entries, _ = judge(path, options, detectors)
    except RunlensError as exc:
        if not loose or isinstance(exc, UsageError):
            raise
        skip_loose(path, exc)
        return None
    return diagnosis, entries


def with_runs_in_file(obj: dict, entries: list[dict] | None) -> dict:
    """The analysis object, with ``runs_in_file`` when the log held several runs (docs/format.md)."""
    return obj if entries is None else {**obj, "runs_in_file": entries}


#: The flags that read another tool's log, by their option names.
IMPORT_FLAGS = {"step": "--step", "loss": "--loss", "val_loss": "--val-loss", "run": "--run"}


def refuse_import_options(options: dict, paths: list[str]) -> None:
    """``--run``/``--loss``/... name columns of another tool's log: on a run directory they would
    be silently ignored, so they are refused, naming the flag."""
    from pathlib import Path

    for path in paths:
        if (Path(path) / "run.json").is_file():
            flags = ", ".join(IMPORT_FLAGS[k] for k in options)
            raise UsageError(f"{flags}: applies to another tool's log, but {path} is a runlens run "
                             "directory (its columns are already named); drop the flag")


def reaches(diagnoses: Iterable[Diagnosis], fail_on: str) -> bool:
    """Whether any finding of ``diagnoses`` is at least as severe as ``fail_on``."""
    return any(d.reaches(fail_on) for d in diagnoses)


def to_json(diagnosis: Diagnosis) -> str:
    """The spec's analysis object, formatted the same way every time."""
    return json.dumps(diagnosis.to_dict(), indent=2, sort_keys=False)


def use_system_allocator() -> None:
    """Let Arrow allocate with malloc in this short-lived process, unless the user chose a pool.

    Arrow's default pool (mimalloc) keeps the buffers freed while Parquet
    pages are decoded; the detectors' numpy arrays cannot reuse them, so a
    10M-row run peaked ~25% higher (benchmarks/results/engine_scale.md).
    Only the CLI does this: a library must not change its host's allocator.
    """
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
