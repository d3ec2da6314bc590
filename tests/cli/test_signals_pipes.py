"""A closed stdout pipe exits 0, Ctrl-C at any moment is one line and status 130, and no library
adds a log line on stderr. Real processes: these are about what the interpreter does at the edges."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
from _cli import SAMPLES, command, env


def _piped_to_head(args: list[str]) -> tuple[int, str]:
    producer = subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    head = subprocess.Popen(["head", "-1"], stdin=producer.stdout, stdout=subprocess.DEVNULL)
    producer.stdout.close()  # head owns the read end: when it exits, the pipe is closed
    head.wait(timeout=120)
    err = producer.stderr.read().decode()
    return producer.wait(timeout=120), err


def test_explain_into_head_exits_0_every_time():
    for _ in range(20):
        code, err = _piped_to_head(["explain"])
        assert code == 0, err
        assert err == "", err


@pytest.mark.parametrize("args", [["analyze", "{runs}", "--format", "json"], ["analyze", "{runs}", "-v"],
                                  ["audit", "{runs}", "--workers", "1"], ["compare", "{one}", "{two}"],
                                  ["validate", "{one}"], ["explain", "curve"]])
def test_a_stdout_pipe_with_no_reader_exits_0_whatever_the_findings(tmp_path, args):
    """Every command: the findings would exit 1, but nobody reads; no traceback, no fail-on line."""
    runs = tmp_path / "runs"
    for name in ("nan_divergence", "crash_oom"):
        shutil.copytree(SAMPLES / name, runs / name)
    args = [a.format(runs=runs, one=runs / "nan_divergence", two=runs / "crash_oom") for a in args]
    proc = subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    proc.stdout.close()  # the reader is gone before the first byte is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err and "fail-on" not in err, err
    assert len(err.strip().splitlines()) <= 1, err  # at most the one-line summary on stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("sigint") / "runs"
    for copy in range(3):  # enough work that the last delay still lands mid-run on a fast machine
        for name in ("healthy", "crash_oom", "plateau", "overfitting"):
            shutil.copytree(SAMPLES / name, root / f"{name}-{copy}")
    return root


def _sigint_as_at_a_terminal() -> None:
    # A job started in the background by a non-interactive shell (a CI runner, `nohup ... &`)
    # inherits SIGINT ignored, and runlens rightly keeps it so; Ctrl-C at a terminal reaches a
    # process whose SIGINT is the default. The test is about the latter, wherever it runs.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("delay", [0.0, 0.03, 0.1, 0.3, 0.8, 1.5])
@pytest.mark.parametrize("cmd", ["audit", "report"])
def test_ctrl_c_at_any_moment_is_one_line_and_130(runs, tmp_path, cmd, delay):
    args = ["audit", str(runs), "--workers", "1"] if cmd == "audit" else \
        ["report", str(runs), "-o", str(tmp_path / "out")]
    proc = subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(),
                            preexec_fn=_sigint_as_at_a_terminal)
    time.sleep(delay)
    if proc.poll() is not None:  # it finished first: nothing was interrupted
        pytest.skip(f"{cmd} finished within {delay}s")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    text = err.decode()
    if "Traceback" in text and "/runlens/" not in text:
        # The interpreter's own start-up (runpy, encodings) was interrupted before the first line
        # of runlens ran: Python reports that itself, and no project code can run earlier.
        assert "runlens" not in text.split("Traceback", 1)[1], text
        return
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    # Before the interpreter installs its handler a SIGINT ends the process as a signal (the
    # shell's 130); from then on runlens answers in one line with 130; never a finished run.
    lines = text.strip().splitlines()
    # The signal can land after the audit wrote its summary and before the process left, a window
    # poll() above cannot see (CI failed on it twice, under OPENBLAS_CORETYPE=Haswell). While Python
    # code still runs the interruption's line follows the summary, alone, with 130. The interpreter's
    # last instants run none: with its handlers back to the default (its module teardown) the
    # signal ends the process as it would any program's, which the shell reports as 130; just
    # before that, noted and never acted on, it leaves the finished audit's own status.
    if lines and cmd == "audit" and re.fullmatch(r"runlens: \d+ runs: .*", lines[0]):
        lines = lines[1:]
        if not lines:
            assert proc.returncode in (-signal.SIGINT, 1), (proc.returncode, text)
            return
    assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, text)
    assert "\n".join(lines) in ("", "runlens: interrupted"), text


def test_no_third_party_log_line_without_a_writable_config_dir(tmp_path):
    """matplotlib warns when it must make a temporary cache folder: not on runlens's stderr."""
    over = {"HOME": "/dev/null/nohome", "XDG_CONFIG_HOME": "/dev/null/nohome", "XDG_CACHE_HOME": "/dev/null/x"}
    e = env(**over)
    e.pop("MPLCONFIGDIR", None)
    result = subprocess.run(command("report", str(SAMPLES / "healthy"), "-o", str(tmp_path), "--format", "html"),
                            capture_output=True, text=True, env=e, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr


_SWALLOWED = """
import os, signal, sys, weakref
from runlens import _interrupt
if sys.argv[1] == "started":
    _interrupt.start()
else:
    _interrupt.running = True
signal.signal(signal.SIGINT, _interrupt._handler)  # the command's handler, as installed for `runlens`

class Held:
    pass

def callback(ref):  # a weakref callback, as the import lock's: the interpreter swallows what it raises
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(10000):
        pass

held = Held()
ref = weakref.ref(held, callback)
del held
print("flag" if _interrupt.interrupted else "no flag")
try:
    _interrupt.check()
except KeyboardInterrupt:
    print("answered")
"""


def test_a_ctrl_c_the_interpreter_swallows_is_silent_and_still_answered():
    """CI once failed on a Ctrl-C that landed in the import lock's weakref callback after the audit's
    summary: the interpreter printed "Exception ignored ... Traceback" and the interrupt was lost."""
    def run(mode):
        return subprocess.run([sys.executable, "-c", _SWALLOWED, mode], capture_output=True, text=True,
                              env=env(), timeout=120, preexec_fn=_sigint_as_at_a_terminal)

    bare = run("bare")  # the control: without start() the interpreter prints the traceback
    assert "Exception ignored" in bare.stderr and "KeyboardInterrupt" in bare.stderr, bare.stderr
    started = run("started")
    assert started.returncode == 0 and started.stderr == "", started.stderr
    assert started.stdout.split() == ["flag", "answered"], started.stdout


_LEAVING = """
import atexit, os, signal, sys
from runlens import _interrupt
_interrupt.start()
signal.signal(signal.SIGINT, _interrupt._handler)  # the command's handler, as installed for `runlens`

def late():  # the interpreter's exit runs this after the CLI decided its status, as its thread shutdown
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(10000):
        pass

atexit.register(late)
if sys.argv[1] == "leaving":
    _interrupt.leaving()
sys.exit(1)
"""


def test_a_ctrl_c_while_the_interpreter_exits_is_still_the_line_and_130():
    """CI failed on a Ctrl-C after the audit's summary, in the interpreter's exit: swallowed there,
    the process left with only the summary. Once the CLI is leaving, the handler answers at once."""
    def run(mode):
        return subprocess.run([sys.executable, "-c", _LEAVING, mode], capture_output=True, text=True,
                              env=env(), timeout=120, preexec_fn=_sigint_as_at_a_terminal)

    running = run("running")  # the control: a KeyboardInterrupt in an atexit callback is swallowed
    assert running.returncode == 1 and "runlens: interrupted" not in running.stderr, running.stderr
    leaving = run("leaving")
    assert leaving.returncode == 130, leaving.stderr
    assert leaving.stderr == "runlens: interrupted\n", leaving.stderr
