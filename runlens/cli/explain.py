"""``runlens explain [CODE]``: print a detector's documentation, or list the codes."""

from __future__ import annotations

import click

from runlens.errors import UsageError


@click.command()
@click.argument("code", required=False)
def explain(code: str | None) -> None:
    """Explain finding CODE (or ``curve``); without CODE, list every code."""
    from runlens.detectors.catalog import documented, explain_text

    docs = documented()
    if code is None:
        width = max(len(c) for c in docs)
        for name, entry in docs.items():
            click.echo(f"{name:<{width}}  {entry.severity:<7}  {entry.summary}")
        return
    if code not in docs:
        raise UsageError(f"unknown code {code!r}; run 'runlens explain' to list the codes")
    click.echo(explain_text(docs[code]), nl=False)
