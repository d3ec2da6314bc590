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


@pytest.mark.parametrize("raised", [ImportError("initialization failed"), RuntimeError("a library's own error"),
                                    None])
def test_a_ctrl_c_that_reaches_the_cli_as_another_exception_is_still_130(monkeypatch, capsys, raised):
    # A KeyboardInterrupt raised inside a C extension's module init surfaces as ImportError
    # "initialization failed" (seen under load, mid-report); a library may catch it and raise its
    # own, or swallow it. Either way the user pressed Ctrl-C: one line and 130, not exit 3 or 0.
    import runlens.cli.analyze as analyze_cmd
    from runlens.cli import main

    def judge(*_a, **_k):
        try:
            _interrupt._handler(signal.SIGINT, None)
        except KeyboardInterrupt:
            if raised is not None:
                raise raised from None
        return None

    monkeypatch.setattr(analyze_cmd, "judge", judge)
    monkeypatch.setattr(sys, "argv", ["train.py"])  # not the command: the 130 is sys.exit's, not os._exit's
    monkeypatch.setattr(_interrupt, "interrupted", False)
    monkeypatch.setattr(_interrupt, "running", True)
    with pytest.raises(SystemExit) as exit_:
        main.main(["analyze", os.devnull], standalone_mode=True)
    assert exit_.value.code == 130
    assert capsys.readouterr().err.strip() == "runlens: interrupted"
