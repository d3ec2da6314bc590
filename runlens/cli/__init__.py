"""The ``runlens`` command line.

Each subcommand lives in its own module of this package and is imported
only when it is invoked, so ``runlens --help`` stays fast and a training
environment without the reporting extras still runs ``runlens analyze``.

Exit status: 0 when nothing reaches ``--fail-on``, 1 when something does,
2 for bad input or usage (one line on stderr, never a traceback).
"""

from __future__ import annotations

import importlib
import sys

import click

from runlens.errors import RunlensError

# name -> "module:attribute"; the module is imported on first use.
COMMANDS = {
    "analyze": "runlens.cli.analyze:analyze",
    "explain": "runlens.cli.explain:explain",
    "report": "runlens.cli.report:report",
    "audit": "runlens.cli.audit:audit",
    "compare": "runlens.cli.compare:compare",
    "import": "runlens.cli.import_:import_cmd",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)

    def invoke(self, ctx: click.Context):  # noqa: D102 - one place turns our errors into exit 2
        try:
            return super().invoke(ctx)
        except RunlensError as exc:
            click.echo(f"runlens: {type(exc).__name__}: {exc}", err=True)
            sys.exit(2)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="runlens")
def main() -> None:
    """runlens: why did this training run go wrong?"""
