"""``runlens report RUN...``: write the HTML and/or Markdown report of runs."""

from __future__ import annotations

import sys

import click

from runlens import _interrupt
from runlens.cli.common import (
    detector_options,
    detector_settings,
    expand_runs,
    fail_on_option,
    judge,
    refuse_both,
    run_counts,
    skip_loose,
    verbosity_options,
)
from runlens.errors import RunlensError, UsageError


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default="runlens-reports",
              show_default=True, help="folder to write the reports into (created if missing)")
@click.option("--format", "fmt", type=click.Choice(["html", "md", "both"]), default="both",
              show_default=True, help="which reports to write")
@click.option("--docs-url", default="", metavar="URL",
              help="also link each finding to the online reference under URL, e.g. "
                   "https://github.com/ORG/runlens/blob/main/ (the reference is always embedded)")
@fail_on_option()
@verbosity_options
@detector_options
def report(runs: tuple[str, ...], out_dir: str, fmt: str, docs_url: str, settings: tuple[str, ...],
           config_file: str | None, fail_on: str = "error", quiet: bool = False, verbose: bool = False) -> None:
    """Write a report for each run RUN: a run directory, another tool's log, or a folder of runs.

    Each report is named after the run and its path (NAME-1a2b3c4d.html and
    .md); with several runs an index.html links them. The reports are
    self-contained: charts, findings and the reference of every finding.
    Prints one line per run (its verdict) and a summary; -v lists every file
    written, -q only the summary. Exits 1 when a finding reaches --fail-on.

    \b
    Examples:
      runlens report runs/exp1
      runlens report runs/ -o reports/ --format html --fail-on warning
    """
    from runlens.io.output import output_dir, report_stem, write_index, write_reports
    from runlens.render.escape import term_inline
    from runlens.report_data import build_report_data
    from runlens.signals import signals_of

    refuse_both(quiet, verbose)
    formats = ("html", "md") if fmt == "both" else (fmt,)
    detectors = detector_settings(settings, config_file)
    loose: set[str] = set()
    paths, _ = expand_runs(runs, loose)
    output_dir(out_dir)  # refuse an unusable folder before any analysis
    entries, written = [], []
    for path in paths:
        _interrupt.check()  # a Ctrl-C the interpreter swallowed (see _interrupt.start) stops here
        # Every column, not the detectors' projection: the charts draw more than they test. A log
        # holding several runs is reported by its worst run, whose headline and warnings list the others.
        try:
            diagnosis, _, run = judge(path, {}, detectors)
        except RunlensError as exc:
            if path not in loose or isinstance(exc, UsageError):
                raise
            skip_loose(path, exc)  # a log found in a folder by its head, unreadable in full: named
            continue
        stem = report_stem(diagnosis.name, path)
        # Entries keep the diagnosis only (plain values): no run's tables wait for the index.
        written = write_reports(build_report_data(diagnosis, signals_of(run)), out_dir, formats, stem=stem,
                                docs_base=docs_url)
        del run
        if verbose:
            click.echo("\n".join(str(w) for w in written))
        elif not quiet:
            click.echo(f"{term_inline(diagnosis.name)}: {term_inline(diagnosis.headline)}")
        entries.append((diagnosis, f"{stem}.html" if "html" in formats else None))
    if not entries:
        raise UsageError(f"{', '.join(runs)}: no run could be read (the logs found are named above)")
    if len(entries) > 1 and "html" in formats:
        where = f"index: {write_index(entries, out_dir)}"
    else:
        where = f"{'reports' if len(entries) > 1 else 'report'}: " + \
            (str(written[0]) if len(entries) == 1 else str(out_dir))
    click.echo(f"{run_counts(d.worst_severity for d, _ in entries)}; {term_inline(where)}")
    if any(d.reaches(fail_on) for d, _ in entries):
        sys.exit(1)
