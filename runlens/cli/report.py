"""``runlens report RUN...``: write the HTML and/or Markdown report of runs."""

from __future__ import annotations

import click

from runlens.cli.common import detector_options, detector_settings, expand_runs


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default="runlens-reports",
              show_default=True, help="folder to write the reports into (created if missing)")
@click.option("--format", "fmt", type=click.Choice(["html", "md", "both"]), default="both",
              show_default=True, help="which reports to write")
@click.option("--docs-url", default="", metavar="URL",
              help="also link each finding to the online reference under URL, e.g. "
                   "https://github.com/ORG/runlens/blob/main/ (the reference is always embedded)")
@detector_options
def report(runs: tuple[str, ...], out_dir: str, fmt: str, docs_url: str, settings: tuple[str, ...],
           config_file: str | None) -> None:
    """Write a report for each run RUN: a run directory, another tool's log, or a folder of runs.

    Each report is named after the run and its path (NAME-1a2b3c4d.html and
    .md); with several runs an index.html links them. The reports are
    self-contained: charts, findings and the reference of every finding.

    \b
    Examples:
      runlens report runs/exp1
      runlens report runs/ -o reports/ --format html
    """
    from runlens.analysis import analyze
    from runlens.io.loader import load_run
    from runlens.render.output import output_dir
    from runlens.render.write import report_stem, write_index, write_reports

    formats = ("html", "md") if fmt == "both" else (fmt,)
    detectors = detector_settings(settings, config_file)
    paths, _ = expand_runs(runs)
    output_dir(out_dir)  # refuse an unusable folder before any analysis
    entries = []
    for path in paths:
        # Every column, not the detectors' projection: the charts draw more than they test.
        diagnosis = analyze(load_run(path), detectors=detectors)
        stem = report_stem(diagnosis.run.name, path)
        for written in write_reports(diagnosis, out_dir, formats, stem=stem, docs_base=docs_url):
            click.echo(str(written))
        entries.append((diagnosis, f"{stem}.html" if "html" in formats else None))
    if len(entries) > 1 and "html" in formats:
        click.echo(str(write_index(entries, out_dir)))
