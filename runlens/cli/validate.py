"""``runlens validate RUN...``: check run directories against run-log format v1."""

from __future__ import annotations

import sys

import click


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("-q", "--quiet", is_flag=True, help="print only the violations, no notes and no summary line")
def validate(runs: tuple[str, ...], quiet: bool) -> None:
    """Check that each run directory RUN follows run-log format v1.

    Prints one line per violation, naming the rule it breaks (the rules are
    listed in docs/format.md), and exits 1 when any run breaks one.
    Useful when you write a recorder for another framework.

    Example: runlens validate runs/exp1 runs/exp2
    """
    from runlens.io.validate import printable, validate_run

    bad = 0
    for run in runs:
        report = validate_run(run)
        shown = printable(run)  # a run's name must not drive the terminal
        for violation in report.violations:
            click.echo(f"{shown}: {violation.line()}")
        if not quiet:
            for note in report.notes:
                click.echo(f"{shown}: note: {note}")
        bad += not report.ok
    if not quiet:
        click.echo(f"{len(runs) - bad} of {len(runs)} runs conform to run-log format v1")
    sys.exit(1 if bad else 0)
