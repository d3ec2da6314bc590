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
    from runlens.detectors.catalog import documented, suggest
    from runlens.render.reference import explain_text

    docs = documented()
    if code is None:
        width = max(len(c) for c in docs)
        levels = {name: severities(name, entry.severity) for name, entry in docs.items()}
        level_width = max(len(v) for v in levels.values())
        for name, entry in docs.items():
            click.echo(f"{name:<{width}}  {levels[name]:<{level_width}}  {entry.summary}")
        return
    if code not in docs:
        close = suggest(code)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise UsageError(f"unknown code {code!r}{hint}; 'runlens explain' lists the codes")
    text = explain_text(docs[code])
    head, sep, rest = text.partition("\n")
    new = head.replace(f"({docs[code].severity})", f"({severities(code, docs[code].severity)})", 1)
    rule, nl, rest = rest.partition("\n")
    if rule and set(rule) == {"="}:  # the underline follows the heading's new length
        rule = "=" * len(new)
    click.echo(new + sep + rule + nl + rest, nl=False)


def severities(code: str, default: str) -> str:
    """The severities ``analyze`` can give ``code`` (``warning/error``), so that ``explain`` never
    lists a lower one than a finding carries."""
    from runlens.detectors import REGISTRY

    cls = REGISTRY.get(code)
    levels = getattr(cls, "severities", ()) if cls is not None else ()
    return "/".join(levels) if levels else default
