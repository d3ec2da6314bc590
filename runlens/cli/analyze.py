"""``runlens analyze RUN``: diagnose one run and print it as text or JSON."""

from __future__ import annotations

import json
import os
import sys

import click

from runlens.diagnosis import SEVERITY_RANK

FAIL_LEVELS = ("error", "warning", "info", "never")


@click.command()
@click.argument("run", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text for a terminal, json for the spec's analysis object")
@click.option("--fail-on", type=click.Choice(FAIL_LEVELS), default="never", show_default=True,
              help="exit 1 when a finding at least this severe is present")
def analyze(run: str, fmt: str, fail_on: str) -> None:
    """Diagnose the run directory RUN (or a log another tool wrote)."""
    from runlens.analysis import analyze as run_analysis

    use_system_allocator()
    diagnosis = run_analysis(run)
    if fmt == "json":
        click.echo(to_json(diagnosis))
    else:
        from runlens.render.text import render

        click.echo(render(diagnosis), nl=False)
    if fail_on != "never" and any(SEVERITY_RANK[f.severity] <= SEVERITY_RANK[fail_on]
                                  for f in diagnosis.findings):
        sys.exit(1)


def to_json(diagnosis) -> str:
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
