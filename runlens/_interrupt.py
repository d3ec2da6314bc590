"""Ctrl-C from the first line of ``runlens`` (the command): one line and status 130, no traceback.

Installed by ``runlens/__init__.py`` before anything else is imported, only when this process is
the command (``runlens``, ``python -m runlens``), never in a program that imports the package.
Until ``runlens.cli`` is running, nothing has been written, so the handler leaves at once; from
then on it raises ``KeyboardInterrupt`` for the CLI to turn into the same line and status after
its outputs are left intact.
"""

from __future__ import annotations

# The C module itself: `signal` imports enum, which is time a Ctrl-C could land in.
import _signal  # type: ignore[import-not-found]  # typeshed has no stub for the C module
import os
import sys

# Not ``typing.TYPE_CHECKING``: importing typing pulls in re and enum, time a Ctrl-C could land in.
# Type checkers take any constant of this name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType

#: Set by ``runlens.cli`` once its own handling of KeyboardInterrupt is in place.
running = False
#: Set when a Ctrl-C was answered with KeyboardInterrupt: the exception may not reach the CLI as
#: itself (raised inside a C extension's module init it becomes an ImportError "initialization
#: failed"; a library may catch it and raise its own), so the CLI reads this flag, not the type.
interrupted = False


def _handler(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 - the signal handler's signature
    global interrupted
    if running:
        interrupted = True
        raise KeyboardInterrupt
    os.write(2, b"runlens: interrupted\n")
    os._exit(130)


def start() -> None:
    """Called by ``runlens.cli`` once it answers KeyboardInterrupt itself. A Ctrl-C that lands
    where the interpreter swallows exceptions (a weakref callback such as the import lock's, a
    ``__del__``) would print "Exception ignored ... Traceback" and be lost: it stays silent, the
    flag is set, and :func:`check` or the CLI's exit answers it."""
    global running
    running = True
    sys.unraisablehook = _unraisable


def _unraisable(unraisable: object) -> None:
    if interrupted and isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)  # type: ignore[arg-type]  # typeshed's UnraisableHookArgs


def leaving() -> None:
    """Called by ``runlens.cli`` once its outputs are written and its status decided. A Ctrl-C
    from here on lands in the interpreter's own exit (thread shutdown, atexit, a finalizer), where
    a KeyboardInterrupt is swallowed or kills the process without a word: it is answered as before
    the CLI ran, with the line and status 130 at once."""
    global running
    running = False


def check() -> None:
    """Raise the KeyboardInterrupt a swallowed Ctrl-C did not deliver: loops over runs call this
    between runs, so an interrupt the interpreter ate still stops the command at the next run."""
    if interrupted:
        raise KeyboardInterrupt


def is_command() -> bool:
    """Whether this process is the ``runlens`` command (``-m``: the package is being found as
    the module to run, which is the only time ``sys.argv[0]`` reads ``-m``)."""
    name = (sys.argv[0] if sys.argv else "").replace("\\", "/").rsplit("/", 1)[-1]
    return name in ("runlens", "runlens.exe", "-m", "__main__.py")


def install(was: object, held: list[int]) -> None:
    """Replace the package's holding handler: ``was`` is SIGINT's handler before it, ``held`` the
    signals it held. The command answers a held Ctrl-C at once; a program importing the package
    gets its own handler back, and a held Ctrl-C as the KeyboardInterrupt it would have had."""
    if was is not _signal.default_int_handler:
        return  # ignored (a background job) or a program's own handler: the package held nothing
    if is_command():
        _signal.signal(_signal.SIGINT, _handler)
        if held:
            _handler(_signal.SIGINT, None)
        return
    _signal.signal(_signal.SIGINT, was)
    if held:
        raise KeyboardInterrupt
