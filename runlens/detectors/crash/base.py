"""What the ``crash_*`` detectors share: decode run.json's error, report it with the last signals."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from runlens.detectors._base import Context, Detector, Needs
from runlens.detectors.crash import decode as crash
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run


class CrashDetector(Detector):
    """Fires when a crashed run's exception decodes to this detector's code."""

    severity = "error"
    needs = Needs(scalars=("loss", "grad_norm", "lr"), events=("kind", "message"))

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        # A run that finished (or still runs) did not crash, whatever its attempts say.
        if run.status != "crashed":
            return []
        decoded = crash.decode(run.error or _exception_event(run))
        if decoded.code != self.code:
            return []
        step = crash.died_at(run)
        evidence = {
            "error_type": decoded.error_type,
            "message": decoded.message,
            "pattern": decoded.kind,
            "cause": decoded.cause,
            "died_at_step": step,
            **decoded.details,
            **crash.last_signals(run),
        }
        if ctx.first_nonfinite_step is not None:
            evidence["first_nonfinite_loss_step"] = ctx.first_nonfinite_step
        return [self.finding(self.headline(decoded, step), step=step, evidence=evidence,
                             advice=decoded.advice)]

    def headline(self, decoded: crash.Decoded, step: int | None) -> str:
        where = f"at step {step:,}" if step is not None else "before the first step"
        return f"{self.title} {where} ({decoded.error_type})"


def _exception_event(run: Run) -> dict | None:
    """The writer's ``exception`` event, for a crashed run whose run.json lost its error."""
    ev = run.events
    if ev is None or "kind" not in ev.column_names or "message" not in ev.column_names:
        return None
    for kind, message in zip(ev.column("kind").to_pylist(), ev.column("message").to_pylist(), strict=True):
        if kind == "exception" and message:
            etype, _, rest = str(message).partition(": ")
            return {"type": etype if rest else "", "message": rest or etype}
    return None
