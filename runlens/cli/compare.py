"""``runlens compare RUN --baseline BASE``: is RUN worse than BASE beyond run-to-run noise?

Exit status: 0 when no regression finding reaches ``--fail-on``, 1 when one
does, 2 for bad usage or a run that cannot be read.
"""

from __future__ import annotations

import sys

import click

from runlens.audit import FAIL_ON


@click.command()
@click.argument("run")
@click.option("--baseline", "baseline", required=True, metavar="BASE", help="the run to compare against")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md", "html"]), default="text",
              show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here instead of stdout")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="error", show_default=True,
              help="exit 1 when a regression at least this severe is found")
def compare(run: str, baseline: str, fmt: str, output: str | None, fail_on: str) -> None:
    """Compare RUN with the baseline run BASE, aligned by step."""
    from runlens.compare import compare_runs
    from runlens.render.compare_render import RENDERERS

    result = compare_runs(run, baseline)
    text = RENDERERS[fmt](result)
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        click.echo(text, nl=False)
    sys.exit(1 if result.reaches(fail_on) else 0)
