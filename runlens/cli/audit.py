"""``runlens audit PATH...``: analyze every run below the paths and print one summary.

stdout carries only the summary (parseable in every format); progress and
logs go to stderr. Exit status: 0 when no finding reaches ``--fail-on``,
1 when one does (an unreadable run counts as an error), 2 for bad usage or
when no run is found.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

import click

from runlens import _interrupt
from runlens.cli.common import color_option, detector_options, detector_params, fail_on_option, use_color
from runlens.render.audit import RENDERERS

if TYPE_CHECKING:
    pass

FORMATS = tuple(RENDERERS)


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text table, json (the spec's objects), md, html, csv or junit (CI test reports)")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the summary here, not stdout")
@fail_on_option()
@click.option("--workers", type=click.IntRange(min=1), help="local worker processes [default: the CPUs]")
@click.option("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler (tcp://host:port)")
@click.option("--reports", "reports_dir", type=click.Path(file_okay=False),
              help="also write an HTML report per run into this folder, linked from the summary")
@click.option("--baseline", metavar="BASE", help="compare every run against this run")
@click.option("-q", "--quiet", is_flag=True, help="no progress bar and no log lines on stderr")
@detector_options
@color_option
def audit(paths: tuple[str, ...], fmt: str, output: str | None, fail_on: str, workers: int | None,
          scheduler: str | None, reports_dir: str | None, baseline: str | None, quiet: bool,
          settings: tuple[str, ...] = (), config_file: str | None = None, color: str = "auto") -> None:
    """Find every run below each PATH and rank them, worst first.

    PATH is a run directory, another tool's log, a folder of runs, or a
    filesystem URL (s3://, gs://, file://). An unreadable run is a row with
    an error, never a silent omission.

    \b
    Examples:
      runlens audit runs/
      runlens audit runs/ --format junit -o audit.xml --fail-on warning
      runlens audit runs/ --baseline runs/main --reports reports/
      runlens audit runs/ --set loss_spikes.z_min=8 --config detectors.toml
    """
    from runlens.audit import audit as run_audit
    from runlens.io.output import check_target, write_text
    from runlens.render.audit import render_audit

    params = detector_params(settings, config_file)  # a bad parameter: one line, before any run is read
    if output:
        check_target(output)  # refused in one line before the audit, not after it
    bar = Progress(enabled=not quiet and sys.stderr.isatty())
    result = run_audit(paths, workers=workers, scheduler=scheduler, baseline=baseline,
                       reports_dir=reports_dir, progress=bar.update, detectors=params)
    bar.close()
    from runlens.render.escape import term_inline

    for file, reason in result.skipped:
        click.echo(f"runlens: skipped {term_inline(file)}: {term_inline(reason)}", err=True)
    # Colour only for the text table on stdout: a file or another format stays plain.
    painted = fmt == "text" and not output and use_color(color)
    text = render_audit(result, fmt, fail_on=fail_on, reports_base=_reports_base(reports_dir, output),
                        color=painted)
    if output:
        write_text(output, text)
    else:
        click.echo(text, nl=False, color=painted)
    if not quiet:
        from runlens.render.audit.cells import summary

        click.echo(f"runlens: {summary(result)} ({result.wall_seconds:.1f}s, {result.backend}, "
                   f"{result.workers} worker{'s' if result.workers != 1 else ''})", err=True)
    sys.exit(1 if result.failed(fail_on) else 0)


def _reports_base(reports_dir: str | None, output: str | None) -> str | None:
    # Links must work from where the summary is opened: relative to its folder.
    if not reports_dir:
        return None
    start = os.path.dirname(os.path.abspath(output)) if output else os.getcwd()
    return os.path.relpath(os.path.abspath(reports_dir), start)


class Progress:
    """A one-line progress bar on stderr, redrawn at most ten times a second."""

    def __init__(self, *, enabled: bool, width: int = 30) -> None:
        self.enabled, self.width = enabled, width
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = False

    def update(self, done: int, total: int) -> None:
        _interrupt.check()  # called after every run, shown or not: a swallowed Ctrl-C stops here
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        filled = self.width * done // max(total, 1)
        rate = done / max(now - self.start, 1e-9)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} runs "
                         f"({rate:.1f}/s)")
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
