"""The ``killed`` detector: the run stopped without recording an exception."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from runlens.detectors._base import Context, Detector, Needs, register
from runlens.detectors.crash import decode as crash
from runlens.diagnosis import Finding
from runlens.io.runmeta import STALE_HEARTBEAT, derive_status

if TYPE_CHECKING:
    from runlens.io.run import Run


@register
class Killed(Detector):
    """The run stopped from outside: no exception was recorded and the writer went silent.

    What it detects:
        A run whose run.json still says ``running`` although its writer is
        gone: the heartbeat is older than ``3 * flush_seconds``, or the run
        was written on this host by a process that no longer exists. The
        loader gives such runs the status ``killed``.

    Why it matters:
        Something ended the process without Python seeing an exception:
        SIGKILL, the kernel's out-of-memory killer, a scheduler's time or
        memory limit, a preempted spot instance, a lost node. The rows
        buffered since the last flush are lost; what was flushed is still
        analysed by the other detectors.

    How it decides:
        ``status == "killed"`` as the loader derived it. The evidence names
        which rule applied (pid gone on this host, or a stale heartbeat),
        the last heartbeat, and the last step, finite loss and gradient
        norm that were flushed; when the recorder saw a SIGTERM (it flushes
        and notes it), that note too: the process was told to stop.

    What to try:
        1. Look for the OOM killer (``dmesg``, ``journalctl -k``, the
           scheduler's job report): host memory is the usual culprit.
        2. Check the job's time and memory limits and preemption notices.
        3. Checkpoint regularly and resume; lower ``flush_seconds`` to lose
           fewer rows next time.

    Parameters:
        None: the decision is the loader's status.
    """

    code = "killed"
    severity = "error"
    title = "Run was killed without an exception"
    needs = Needs(scalars=("loss", "grad_norm", "lr"), events=("kind", "message"))

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        if run.status != "killed":
            return []
        step = crash.died_at(run)
        evidence = {
            "judged_by": derive_status(run.meta)[1] or STALE_HEARTBEAT,
            "heartbeat_at": run.meta.get("heartbeat_at"),
            "flush_seconds": run.meta.get("flush_seconds"),
            **crash.last_signals(run),
        }
        term = _sigterm_note(run)
        if term:
            evidence["sigterm"] = term
        where = f" after step {step - 1:,}" if step is not None else " before its first step"
        return [self.finding(f"Run stopped{where} without an exception (killed from outside)",
                             step=step, evidence=evidence,
                             advice="Check the kernel log and the scheduler for the OOM killer, time "
                                    "limits or preemption; checkpoint and resume.")]


def _sigterm_note(run: Run) -> str | None:
    """The recorder's note that SIGTERM arrived (preemption, a scheduler's stop), if it left one."""
    ev = run.events
    if ev is None or not {"kind", "message"} <= set(ev.column_names):
        return None
    for kind, message in zip(ev.column("kind").to_pylist(), ev.column("message").to_pylist(), strict=True):
        if kind == "user" and isinstance(message, str) and "SIGTERM" in message:
            return message
    return None
