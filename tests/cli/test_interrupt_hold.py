"""The package holds Ctrl-C from its first line until runlens._interrupt is loaded: a program that
imports runlens gets its own handler back (and a held Ctrl-C as its KeyboardInterrupt); the command
answers a held one in one line with 130."""

from __future__ import annotations

import _signal
import os
import signal
import subprocess
import sys

import pytest

from runlens import _interrupt


def test_a_program_gets_its_handler_back_and_a_held_ctrl_c_as_keyboardinterrupt(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py"])
    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, lambda *_: None)  # what the package's holder would be
        with pytest.raises(KeyboardInterrupt):
            _interrupt.install(_signal.default_int_handler, [signal.SIGINT])
        assert signal.getsignal(signal.SIGINT) is _signal.default_int_handler
        _interrupt.install(_signal.default_int_handler, [])  # nothing held: nothing raised
        assert signal.getsignal(signal.SIGINT) is _signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_an_ignored_sigint_is_left_ignored(monkeypatch):
    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _interrupt.install(signal.SIG_IGN, [])
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_the_command_answers_a_held_ctrl_c_in_one_line():
    code = ("import sys, _signal; sys.argv = ['runlens']; from runlens import _interrupt; "
            "_interrupt.install(_signal.default_int_handler, [2])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 130
    assert proc.stderr.decode() == "runlens: interrupted\n"
