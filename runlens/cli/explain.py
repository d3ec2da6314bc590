"""``runlens explain [CODE]``: print what a code means and what to try, or list the codes."""

from __future__ import annotations

import click

from runlens.errors import UsageError


@click.command()
@click.argument("code", required=False)
def explain(code: str | None) -> None:
    """Explain CODE: a finding code, a curve label, or 'curve'.

    Prints what it detects, why it matters, how it decides, what to try and
    the parameters you can set with --set CODE.PARAM=VALUE. Without CODE,
    lists every code runlens can emit.

    \b
    Examples:
      runlens explain
      runlens explain vanishing_gradients
    """
    from runlens.detectors.catalog import documented, explain_text, suggest

    docs = documented()
    if code is None:
        width = max(len(c) for c in docs)
        for name, entry in docs.items():
            click.echo(f"{name:<{width}}  {entry.severity:<7}  {entry.summary}")
        return
    if code not in docs:
        close = suggest(code)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise UsageError(f"unknown code {code!r}{hint}; 'runlens explain' lists the codes")
    click.echo(explain_text(docs[code]), nl=False)
