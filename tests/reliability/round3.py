"""Round 3 of the hostile campaign: bounded work, consistent reads, inert output, safe -o.

``python -m tests.reliability.round3`` runs every case and prints the figures of
docs/reliability.md's "Round 3" section; ``test_round3.py`` runs each case as a
test. A case builds its input in a fresh folder, runs runlens (the CLI in a child
process, exactly as a user does, or the engine in-process where the result is a
value), and returns the problems it saw, each tagged with its class of failure:

- ``traceback``: a traceback, or exit 2 that is not one ``runlens: ...`` line;
- ``internal``: exit 3 (an internal error) on bad input;
- ``hang``: no exit within :data:`CASE_SECONDS`;
- ``memory``: past the :data:`ADDRESS_SPACE` limit the child runs under (RLIMIT_AS);
- ``injection``: an escape byte, C1 control or bidi control reaching a terminal,
  a CSV row split or a live formula, a bidi control in HTML/Markdown;
- ``rows``: rows lost or duplicated;
- ``outside``: a write outside the output, a special file or symlink replaced;
- ``other``: an exit status the case does not allow.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ._harness import ROOT, child_env

CASE_SECONDS = 60
ADDRESS_SPACE = 2 << 30
KINDS = ("traceback", "internal", "hang", "memory", "injection", "rows", "outside", "other")
# What must never reach a terminal from run-supplied text: ESC, C1 controls (UTF-8 encoded), bidi.
_TERMINAL_BAD = (b"\x1b", "\u009b".encode(), "\u009d".encode(), "\u202e".encode(), "\u2066".encode(),
                 "\u202d".encode(), b"\x07")


@dataclass(frozen=True)
class Case:
    klass: str
    name: str
    body: Callable[[Path], list[str]]


CASES: list[Case] = []


def case(klass: str, name: str):
    """Register ``body(workdir) -> problems`` as a case of ``klass``."""
    def register(body: Callable[[Path], list[str]]) -> Callable[[Path], list[str]]:
        CASES.append(Case(klass, name, body))
        return body
    return register


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    os.setsid()  # its own process group: a hang is killed with everything it started


@dataclass
class Ran:
    code: int | None
    out: bytes
    err: bytes
    problems: list[str] = field(default_factory=list)


def cli(*args: str, allowed=(0, 2), terminal=True, env_over: dict | None = None, cwd=None,
        code_prefix: str | None = None) -> Ran:
    """``python -m runlens ARGS`` under the case limits; its problems classified.

    ``terminal``: stdout and stderr are what a terminal would show, so no escape may
    reach them. ``code_prefix``: Python run before the CLI (to shorten a timeout).
    """
    env = child_env()
    env.update(NO_COLOR="1", LC_ALL="C.UTF-8", COLUMNS="100", MPLBACKEND="Agg", **(env_over or {}))
    if code_prefix:
        cmd = [sys.executable, "-c", f"{code_prefix}\nfrom runlens.cli import main\nmain()", *args]
    else:
        cmd = [sys.executable, "-m", "runlens", *args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, preexec_fn=_limits, cwd=cwd)
    try:
        out, err = proc.communicate(timeout=CASE_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return Ran(None, out, err, [f"hang: no exit within {CASE_SECONDS} s"])
    ran = Ran(proc.returncode, out, err)
    ran.problems = classify(ran, allowed, terminal)
    return ran


def classify(ran: Ran, allowed, terminal: bool) -> list[str]:
    text = ran.err.decode("utf-8", "replace")
    tail = (text.strip().splitlines() or [""])[-1][:200]
    if b"MemoryError" in ran.err or (ran.code is not None and ran.code < 0 and b"memory" in ran.err.lower()):
        return [f"memory: exit {ran.code}: {tail}"]
    if b"Traceback (most recent call last)" in ran.err:
        return [f"traceback: {tail}"]
    if ran.code == 3:
        return [f"internal: exit 3: {tail}"]
    problems = []
    if ran.code not in allowed:
        problems.append(f"other: exit {ran.code} (allowed {allowed}): {tail}")
    if ran.code == 2:
        lines = [ln for ln in ran.err.splitlines() if ln.strip()]
        if len(lines) != 1 or not lines[0].startswith(b"runlens: "):
            problems.append(f"traceback: exit 2 is not one 'runlens:' line: {ran.err[:200]!r}")
    if terminal:
        bad = [b for b in _TERMINAL_BAD if b in ran.out or b in ran.err]
        if bad:
            problems.append(f"injection: {bad} reached the terminal")
    return problems


@dataclass
class Figures:
    cases: Counter = field(default_factory=Counter)
    failures: Counter = field(default_factory=Counter)
    by_kind: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)


def run_cases(workdir: Path, cases: list[Case] | None = None) -> Figures:
    import shutil

    fig = Figures()
    for c in cases or all_cases():
        folder = workdir / f"{c.klass}-{c.name}".replace(" ", "_").replace("/", "_")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            problems = c.body(folder)
        except Exception as exc:  # noqa: BLE001 - a case that breaks is a failure of what it tests
            problems = [f"traceback: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"]
        fig.cases[c.klass] += 1
        if problems:
            fig.failures[c.klass] += 1
            for p in problems:
                fig.by_kind[p.split(":")[0]] += 1
            fig.examples.append(f"{c.klass}/{c.name}: {problems[0][:220]}")
        shutil.rmtree(folder, ignore_errors=True)
    return fig


def all_cases() -> list[Case]:
    # Run as ``python -m``, this module is __main__: the cases register in the imported one.
    from . import round3 as registry
    from . import round3_cases, round3_more, round3_remote  # noqa: F401 - importing registers the cases

    return list(registry.CASES)


def main() -> None:
    import tempfile
    import time

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="round3-") as tmp:
        fig = run_cases(Path(tmp))
    print(f"root {ROOT}, {time.monotonic() - start:.0f} s")
    for klass in sorted(fig.cases):
        print(f"{klass}: {fig.cases[klass]} cases, {fig.failures[klass]} failing")
    print("failures by kind:", dict(fig.by_kind))
    print("\n".join(fig.examples))


if __name__ == "__main__":
    main()
