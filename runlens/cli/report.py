"""``runlens report RUN [RUN...]``: write the HTML and/or Markdown report of runs."""

from __future__ import annotations

import os

import click

from runlens.errors import UsageError


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default="runlens-reports",
              show_default=True, help="directory to write the reports into")
@click.option("--format", "fmt", type=click.Choice(["html", "md", "both"]), default="both",
              show_default=True, help="which reports to write")
@click.option("--docs-url", default="", metavar="URL",
              help="prefix for links to the detector reference in the Markdown report, e.g. "
                   "https://github.com/ORG/runlens/blob/main/ (relative links do not resolve in a PR comment)")
def report(runs: tuple[str, ...], out_dir: str, fmt: str, docs_url: str) -> None:
    """Write a report for each run directory RUN (an index.html too when there are several)."""
    from runlens.analysis import analyze
    from runlens.io.loader import load_run
    from runlens.render.write import report_stem, write_index, write_reports

    formats = ("html", "md") if fmt == "both" else (fmt,)
    for path in runs:
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such run directory")
    entries = []
    stems: set[str] = set()
    for path in runs:
        # Every column, not the detectors' projection: the charts draw more than they test.
        diagnosis = analyze(load_run(path))
        stem = _unique(report_stem(diagnosis.run.name), stems)
        for written in write_reports(diagnosis, out_dir, formats, stem=stem, docs_base=docs_url):
            click.echo(str(written))
        entries.append((diagnosis, f"{stem}.html" if "html" in formats else None))
    if len(entries) > 1 and "html" in formats:
        click.echo(str(write_index(entries, out_dir)))


def _unique(stem: str, taken: set[str]) -> str:
    """``stem``, or ``stem-2``, ``stem-3``... when two runs share a name."""
    candidate, n = stem, 1
    while candidate in taken or candidate == "index":
        n += 1
        candidate = f"{stem}-{n}"
    taken.add(candidate)
    return candidate
