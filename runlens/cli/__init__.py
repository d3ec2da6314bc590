"""The ``runlens`` command line.

Each subcommand lives in its own module of this package and is imported
only when it is invoked, so ``runlens --help`` stays fast and a training
environment without the reporting extras still runs ``runlens analyze``.

Exit status (the same for every subcommand):

    0  done, and nothing reached --fail-on
    1  a finding reached --fail-on
    2  bad input or usage: one line ``runlens: <message>`` on stderr
    3  an internal error (a bug in runlens): one line; RUNLENS_DEBUG=1 shows the traceback
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, Literal, NoReturn, overload

import click

from runlens import _interrupt
from runlens.errors import RunlensError

EXIT_OK, EXIT_FINDING, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

# name -> "module:attribute"; the module is imported on first use.
COMMANDS = {
    "analyze": "runlens.cli.analyze:analyze",
    "explain": "runlens.cli.explain:explain",
    "report": "runlens.cli.report:report",
    "audit": "runlens.cli.audit:audit",
    "compare": "runlens.cli.compare:compare",
    "import": "runlens.cli.import_:import_cmd",
    "validate": "runlens.cli.validate:validate",
}

EPILOG = """\b
Examples:
  runlens analyze runs/exp1              diagnose one run
  runlens report runs/ -o reports/       an HTML and Markdown report per run
  runlens audit runs/ --fail-on error    rank every run below runs/, exit 1 on an error
  runlens compare runs/new runs/main     is the new run worse than main's?
  runlens explain vanishing_gradients    what a finding means and what to try

\b
Exit status: 0 ok, 1 a finding reached --fail-on, 2 bad input or usage,
3 an internal error (please report it; RUNLENS_DEBUG=1 shows the traceback).
"""


def error_line(message: str) -> str:
    """``runlens: <message>`` on one line, whatever the message holds."""
    from runlens.render.escape import term_inline

    # A path or a run.json value in the message must not drive the terminal either.
    return "runlens: " + " ".join(term_inline(message).split())


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)

    def resolve_command(self, ctx: click.Context, args: list[str],
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            from runlens.cli.common import did_you_mean

            hint = did_you_mean(name, COMMANDS) or f"; the commands are {', '.join(sorted(COMMANDS))}"
            raise click.UsageError(f"no such command {name!r}{hint}")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        # A reader that went away (`runlens explain | head -1`) is not an error. It must be caught
        # here: click's own handler, around this call, turns a broken pipe into exit status 1.
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise click.exceptions.Exit(_pipe_closed()) from None

    @overload
    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: Literal[True] = True, **extra: Any) -> NoReturn: ...
    @overload
    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = ..., **extra: Any) -> int: ...
    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> int:
        """Run the command; every way out is one of the documented exit statuses."""
        from runlens.io.output import safe_streams

        quiet_third_parties()
        safe_streams()  # a lone surrogate in a run name is escaped on stdout, not a UnicodeEncodeError
        _interrupt.start()  # Ctrl-C is a KeyboardInterrupt from here: answered below
        try:
            rv = super().main(args, prog_name or "runlens", complete_var, standalone_mode=False, **extra)
            code = rv if isinstance(rv, int) else EXIT_OK
        except SystemExit as exc:  # a command's sys.exit(1): flush first, a closed pipe wins
            code = exc.code if isinstance(exc.code, int) else EXIT_USAGE
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # `runlens` alone: the normal help, as click shows it
            return _exit(exc.exit_code, None, standalone_mode)
        except click.exceptions.UsageError as exc:
            hint = f" (see 'runlens {exc.ctx.command_path.split(' ', 1)[1]} --help')" \
                if exc.ctx and " " in exc.ctx.command_path else " (see 'runlens --help')"
            return _exit(EXIT_USAGE, error_line(exc.format_message()) + hint, standalone_mode)
        except click.exceptions.Abort:
            return _exit(130, "runlens: interrupted", standalone_mode)
        except click.ClickException as exc:
            return _exit(EXIT_USAGE, error_line(exc.format_message()), standalone_mode)
        except RunlensError as exc:
            return _exit(EXIT_USAGE, error_line(str(exc)), standalone_mode)
        except KeyboardInterrupt:
            return _exit(130, "runlens: interrupted", standalone_mode)
        except BrokenPipeError:
            return _exit(_pipe_closed(), None, standalone_mode)  # `runlens ... | head`: fine
        except OSError as exc:  # a file we were told to read or write: the user's input
            where = f"{exc.filename}: " if exc.filename else ""
            return _exit(EXIT_USAGE, error_line(f"{where}{exc.strerror or exc}"), standalone_mode)
        except Exception as exc:  # noqa: BLE001 - the one place a bug becomes exit 3, not a traceback
            if os.environ.get("RUNLENS_DEBUG"):
                raise
            what = str(exc) or type(exc).__name__
            return _exit(EXIT_INTERNAL, error_line(
                f"internal error: {what} (a bug in runlens: please report it; "
                "RUNLENS_DEBUG=1 shows the traceback)"), standalone_mode)
        try:
            sys.stdout.flush()  # the last buffered line meets a closed pipe here, not at exit
        except BrokenPipeError:
            code = _pipe_closed()
        except (OSError, ValueError):
            pass
        return _exit(code, None, standalone_mode) if standalone_mode else code


def _exit(code: int, line: str | None, standalone: bool) -> int:
    if _interrupt.interrupted and code != 130:
        # Ctrl-C reached the command as some other exception (an ImportError from a C extension's
        # init, a library's own error) or was swallowed: the user's interrupt is the answer.
        code, line = 130, "runlens: interrupted"
    if line:
        try:
            click.echo(line, err=True)
        except OSError:
            pass  # stderr is gone too: the status still says it
    if standalone and code == 130 and _interrupt.is_command():
        # Interrupted (the command, not a program calling main()): the with-blocks have closed and renamed what they wrote, but a C library
        # may still be mid-call on another thread (Arrow reading a file through Python), and one
        # that calls back into a finalizing interpreter aborts it (SIGABRT, "Fatal Python error").
        # Leave as the handler does before the CLI runs: flushed, then at once.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(130)
    if standalone:
        if _interrupt.is_command():
            _interrupt.leaving()
        sys.exit(code)
    return code


def _pipe_closed() -> int:
    """stdout's reader left: drop what is still buffered (at exit it would raise again) and
    say 0, whatever the findings: the reader took what it wanted."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return EXIT_OK


def quiet_third_parties() -> None:
    """No library's log line on stderr: matplotlib warns that it made a temporary cache folder
    when it finds no writable one; runlens says what matters itself, in one line."""
    import logging

    for name in ("matplotlib", "fontTools", "PIL"):
        logging.getLogger(name).setLevel(logging.ERROR)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.version_option(package_name="runlens")
def main() -> None:
    """runlens: why did this training run go wrong?

    Reads the logs a training run left (the runlens recorder's run
    directories, or TensorBoard, Lightning, Hugging Face and CSV logs) and
    says what went wrong, with the numbers behind it and what to try.
    """
