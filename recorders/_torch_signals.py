"""The recorder's process-level handlers: an uncaught exception ends the run ``crashed``; SIGTERM flushes.

A mixin of :class:`recorders.torch.Recorder` (kept apart so the recorder reads as its moments).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType, TracebackType

    from recorders.writer import RunWriter


class Handlers:
    """``sys.excepthook`` and SIGTERM handling; the Recorder provides ``_crashed``, ``_resolve``,
    ``_writer``, ``_step``, ``_pid`` and ``_guard``."""

    _prev_sigterm: Any = None
    _prev_excepthook: Any = None

    if TYPE_CHECKING:  # what the Recorder provides (declared here for the type checker only)
        _writer: RunWriter
        _step: int
        _pid: int

        def _resolve(self) -> None: ...
        def _crashed(self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None: ...
        def _guard(self, what: str, fn: Callable[..., object], *args: object) -> None: ...

    def _install_handlers(self) -> None:
        self._prev_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        if threading.current_thread() is threading.main_thread():
            self._prev_sigterm = signal.getsignal(signal.SIGTERM)
            signal.signal(signal.SIGTERM, self._on_sigterm)

    def _restore_handlers(self) -> None:
        if self._prev_excepthook is not None and sys.excepthook == self._excepthook:
            sys.excepthook = self._prev_excepthook
        if (self._prev_sigterm is not None and threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGTERM) == self._on_sigterm):
            signal.signal(signal.SIGTERM, self._prev_sigterm)

    def _excepthook(self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if os.getpid() == self._pid:  # not in a forked DataLoader worker
            self._guard("recording the exception", lambda: self._crashed(exc_type, exc, tb))
        (self._prev_excepthook or sys.__excepthook__)(exc_type, exc, tb)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        """Preemption: write what is buffered; the run stays ``running`` and reads as killed."""
        def flush() -> None:
            self._resolve()
            self._writer.add_event(max(self._step - 1, 0), "user",
                                   f"SIGTERM received at step {self._step}; buffered rows flushed")
            self._writer.flush()
        if os.getpid() == self._pid:  # a forked DataLoader worker inherits this handler
            self._guard("flushing on SIGTERM", flush)
        prev = self._prev_sigterm
        if callable(prev):
            prev(signum, frame)
        elif prev != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
