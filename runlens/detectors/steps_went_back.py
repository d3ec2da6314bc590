"""The ``steps_went_back`` detector: the step counter went back, so logged rows replaced each other."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from runlens.detectors._base import Context, Detector, Needs, register
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run


def recorded_rewinds(meta: Mapping[str, Any]) -> dict[str, int] | None:
    """What the writer counted in run.json ``attempts[i].steps_went_back``, summed over attempts."""
    entries = []
    for attempt in meta.get("attempts") or ():
        entry = attempt.get("steps_went_back") if isinstance(attempt, Mapping) else None
        counts = [entry.get(k) for k in _KEYS] if isinstance(entry, Mapping) else []
        ints = [v for v in counts if isinstance(v, int) and not isinstance(v, bool)]
        if counts and len(ints) == len(counts):
            entries.append(ints)
    if not entries:
        return None
    times, rows, first_from, first_to = entries[0]
    return {"times": sum(e[0] for e in entries), "rows": sum(e[1] for e in entries),
            "first_from": first_from, "first_to": first_to}


_KEYS = ("times", "rows", "first_from", "first_to")


@register
class StepsWentBack(Detector):
    """The step counter went back within one attempt: rows with the same step replaced each other.

    What it detects:
        Training rows whose step is not past the steps written before them
        in the same attempt: the counter restarted (a batch index passed as
        the step restarts every epoch), stood still (the epoch passed as
        every batch's step), or a second training was written into the same
        folder by the same process. Resumes are not counted: a later attempt
        starting again from its checkpoint's step is what a resume does.

    Why it matters:
        A run keeps one row per step (the last), so every row a later one
        shares its step with is gone from the curve: the loss the analysis
        sees is the last epoch's, or a mix of two trainings, and no other
        finding can be trusted to describe the whole run.

    How it decides:
        From the scalars' steps in the order they were written (the
        loader's ``step_rewinds``: a step below the previous row's that no
        later attempt's ``first_step`` explains) or, when compaction already
        merged the rows, from the count the recorder kept while training
        (run.json ``attempts[i].steps_went_back``). Any such rewind fires;
        the evidence gives how often, how many rows share a step, and where
        it first went back. Severity error.

    What to try:
        Pass a step that keeps counting across epochs
        (``step=epoch * len(loader) + i``), or no step at all: the recorder
        counts optimizer steps itself. Give a new training its own recorder
        and folder; resume with ``resume=True`` so the attempt is recorded.

    Parameters:
        None: any rewind is a fault of the log.
    """

    code = "steps_went_back"
    severity = "error"
    title = "Step counter went back"
    needs = Needs(scalars=("loss",))

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        seen = run.step_rewinds
        source = "scalars rows in write order"
        if seen is None:
            seen, source = recorded_rewinds(run.meta), "run.json attempts[].steps_went_back"
        if seen is None:
            return []
        times, rows, a, b = seen["times"], seen["rows"], seen["first_from"], seen["first_to"]
        if times >= 2:
            what = (f"went back {times:,} times (first from step {a:,} to {b:,}): a counter that restarts, "
                    "such as a batch index passed as the step")
        elif times == 1:
            what = (f"went back once, from step {a:,} to {b:,}, with no resume recorded: a second training "
                    "written after the first")
        else:
            what = f"stood still (step {b:,} written again): a step that does not change every step"
        return [self.finding(
            f"The step counter {what}; {rows:,} logged rows share their step with another, and only the "
            "last of each is in the curve",
            step=b, evidence={"times": times, "rows_sharing_a_step": rows, "first_from": a, "first_to": b,
                              "source": source},
            advice="Pass a step that keeps counting across epochs (step=epoch * len(loader) + i), or none: "
                   "the recorder counts steps itself; give a new training its own folder.")]
