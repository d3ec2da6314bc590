"""What a diagnosis says first, one definition each: the key numbers, the verdict step, the headline.

Every command and page (``analyze`` text and JSON, the Markdown and HTML
reports, ``audit``, ``compare``) shows these values and computes none of its
own, so a number can no longer differ between two commands.

- **Key numbers** (:func:`run_numbers`): read from the run's signals, the
  detectors' own reading of the loss (a null loss is not a loss; a
  non-finite loss on a step a loss scaler skipped does not count).
- **Verdict step** (:func:`verdict_step`): where the failure the headline
  names starts, from the signals. A divergence starts at the first step
  after which the loss stayed above where it started (or at its first
  non-finite value, if earlier): the loss that jumps from 0.7 to 4,000 at
  step 1 diverged at step 1. A crash or a kill is at its stop; the other
  curve labels keep the step their test names; otherwise the leading
  finding's step.
- **Headline** (:func:`headline`): one sentence naming the outcome and its
  cause, the leading finding that is not a restatement of the symptom.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np

#: The key numbers of a run; ``run_numbers`` returns exactly these keys.
KEY_NUMBERS = ("steps", "first_step", "last_step", "first_loss", "final_loss", "final_loss_step",
               "min_loss", "min_loss_step", "val_min", "val_min_step", "final_val_loss",
               "final_val_step", "first_nonfinite_step", "duration_s", "axis")
#: What the steps count: a recorder's optimizer steps, or the log's own epochs or rows (an imported
#: log's ``config.index_kind``); every page names the axis by this word.
AXES = ("step", "epoch", "row")

#: Codes that measure a curve label's symptom rather than explain it: never named as its cause.
SYMPTOMS: Mapping[str, frozenset[str]] = {
    "diverged": frozenset({"diverged", "nonfinite_loss", "nonfinite_gradient", "loss_spikes"}),
    "unstable": frozenset({"unstable", "late_loss_variance", "loss_spikes"}),
    "underfitting": frozenset({"underfitting", "loss_at_chance", "plateau"}),
    "overfitting": frozenset({"overfitting"}),
}
FAILING = ("diverged", "unstable", "underfitting", "overfitting")


def run_numbers(signals: Any, run: Any) -> dict[str, Any]:
    """The key numbers of ``run``, read from its signals.

    ``final_loss`` is the last counted training loss (NaN when the run ended
    non-finite: that is the news), ``min_loss`` the lowest finite one,
    ``val_min`` the lowest finite ``val_loss``, ``first_nonfinite_step`` the
    first counted non-finite loss, ``steps`` how many training steps were
    recorded and ``duration_s`` :func:`duration`. Absent values are None.
    """
    out: dict[str, Any] = dict.fromkeys(KEY_NUMBERS)
    steps = run.steps("scalars")
    if len(steps):
        out.update(steps=int(len(steps)), first_step=int(steps[0]), last_step=int(steps[-1]))
    loss = signals.loss_logged
    if len(loss):
        out.update(first_loss=float(loss.values[0]), final_loss=float(loss.values[-1]),
                   final_loss_step=int(loss.steps[-1]))
        low = lowest(loss.steps, loss.values)
        if low is not None:
            out["min_loss_step"], out["min_loss"] = low
    val = signals.validation.get("val_loss")
    if val is not None and len(val):
        out.update(final_val_loss=float(val.values[-1]), final_val_step=int(val.steps[-1]))
        low = lowest(val.steps, val.values)
        if low is not None:
            out["val_min_step"], out["val_min"] = low
    out["first_nonfinite_step"] = signals.first_nonfinite_step
    out["duration_s"] = duration(run)
    config = run.meta.get("config")
    kind = config.get("index_kind") if isinstance(config, Mapping) else None
    out["axis"] = kind if kind in AXES else "step"
    return out


def lowest(steps: np.ndarray, values: np.ndarray) -> tuple[int, float] | None:
    """``(step, value)`` of the lowest finite value (the first one on a tie), or None."""
    finite = np.isfinite(values)
    if not finite.any():
        return None
    i = int(np.nanargmin(np.where(finite, values, np.nan)))
    return int(steps[i]), float(values[i])


def duration(run: Any) -> float | None:
    """Wall-clock seconds of the run: run.json's ``started_at`` to ``ended_at`` (or the last
    heartbeat, for a run that did not close), else the span of the recorded ``time`` column;
    None when unknown. An imported run's run.json times are when the import ran, not the
    training: only its logged times count, and only when they move."""
    config = run.config if isinstance(run.config, Mapping) else {}
    imported = isinstance(config.get("imported_from"), Mapping)
    if not imported:
        from runlens.io.runmeta import parse_time

        meta = run.meta if isinstance(run.meta, Mapping) else {}
        start = parse_time(meta.get("started_at"))
        end = parse_time(meta.get("ended_at")) or parse_time(meta.get("heartbeat_at"))
        if start is not None and end is not None and end >= start:
            return float(end - start)
    time = run.column("scalars", "time")
    if time is not None and np.isfinite(time).sum() >= 2:
        span = float(np.nanmax(time) - np.nanmin(time))
        return span if span > 0 or not imported else None
    return None


# -- the verdict step ----------------------------------------------------------

def divergence_onset(steps: np.ndarray, values: np.ndarray) -> int | None:
    """The first step after which the finite loss stayed above its first value to the end,
    or None when it ends at or below where it started (it did not leave its starting level)."""
    if len(values) < 2:
        return None
    below = np.flatnonzero(values <= values[0])
    last = int(below[-1])  # index 0 is always there
    return None if last + 1 >= len(values) else int(steps[last + 1])


def verdict_step(status: str, curve: Any, findings: Sequence[Any], signals: Any, run: Any) -> int | None:
    """The step where the failure the headline names starts (see the module docstring)."""
    label = curve.label
    nonfinite = signals.first_nonfinite_step
    if label == "diverged":
        loss = signals.loss
        onset = divergence_onset(loss.steps, loss.values)
        found = [s for s in (onset, nonfinite) if s is not None]
        if found:
            return min(found)
        return _curve_step(curve)
    stop = _stop(status, findings, run)
    if stop is not None:
        return stop
    if label in FAILING and _curve_step(curve) is not None:
        return _curve_step(curve)
    lead = next((f for f in findings if f.severity != "info" and f.step is not None), None)
    return None if lead is None else int(lead.step)


def _curve_step(curve: Any) -> int | None:
    step = curve.evidence.get("step")
    return int(step) if isinstance(step, (int, np.integer)) and not isinstance(step, bool) else None


def _stop(status: str, findings: Sequence[Any], run: Any) -> int | None:
    if status not in ("crashed", "killed"):
        return None
    error = run.error if isinstance(getattr(run, "error", None), Mapping) else None
    if error is not None and isinstance(error.get("step"), int) and not isinstance(error.get("step"), bool):
        return int(error["step"])
    crash = next((f for f in findings if f.severity == "error" and f.step is not None), None)
    if crash is not None:
        return int(crash.step)
    steps = run.steps("scalars")
    return int(steps[-1]) if len(steps) else None


# -- the headline --------------------------------------------------------------

def cause_of(curve: Any, findings: Sequence[Any]) -> Any | None:
    """The finding that explains the curve's outcome rather than restating it, or None.

    Candidates are the root causes the cause graph found for the label
    (``curve.evidence["likely_cause"]``, ``runlens.detectors._causes``), in
    the findings' order (cause first); a code that measures the symptom
    itself is never one, except a NaN born in the loss (healthy gradients
    before it), which is a numerical fault."""
    roots = curve.evidence.get("likely_cause") or ()
    symptoms = SYMPTOMS.get(curve.label, frozenset())
    for f in findings:
        if f.code not in roots or f.severity == "info":
            continue
        if f.code not in symptoms or (f.code == "nonfinite_loss" and f.evidence.get("cause") == "numerical"):
            return f
    return None


def headline(status: str, curve: Any, findings: Sequence[Any], numbers: Mapping[str, Any],
             step: int | None) -> str:
    """One sentence: the outcome, where it starts, and its cause (or that none was found)."""
    label = curve.label
    axis = numbers.get("axis") or "step"  # the log's own word: "Overfitting from epoch 7"
    at = "" if step is None else f" at {axis} {step:,}"
    crash = next((f for f in findings if f.severity == "error" and f.code.startswith(("crash", "killed"))),
                 None)
    if label == "diverged":
        outcome = f"Diverged from {axis} {step:,}" if step is not None else "Diverged"
        nonfinite = numbers.get("first_nonfinite_step")
        if nonfinite is not None and nonfinite != step:
            outcome += f" (the loss became NaN/Inf at {axis} {nonfinite:,})"
    elif status in ("crashed", "killed") and crash is not None:
        # A crash finding's title names the step and the exception already.
        said = step is None or f"step {step:,}" in crash.title
        title = crash.title if said else f"{status.capitalize()}{at}: {_lower(crash.title)}"
        return _sentence(title)
    elif label in FAILING:
        # Underfitting has no start: its step is where the test judged the late level.
        since = step is not None and label != "underfitting"
        outcome = f"{label.capitalize()} from {axis} {step:,}" if since else label.capitalize()
    elif label == "insufficient_data":
        return _sentence(f"Not enough data to judge the curve: {curve.reason}")
    else:
        lead = next((f for f in findings if f.severity != "info"), None)
        if lead is None:
            return _sentence(f"Healthy: {curve.reason}")
        return _sentence(f"The loss curve is healthy, but {_lower(lead.title)}")
    cause = cause_of(curve, findings)
    if cause is not None:
        return _sentence(f"{outcome}; likely cause: {_name(cause)}: {_lower(cause.title)}")
    if label == "overfitting":  # the model memorised the training set: the symptom is the cause
        return _sentence(f"{outcome}: {_symptom(label, curve, numbers)}")
    if curve.evidence.get("kind") == "short_lr_vanished":  # the rate is the cause, and the curve says it
        return _sentence(f"{outcome}: the learning rate is {curve.evidence['last_lr']:.3g} from {axis} "
                         f"{curve.evidence['step']:,} on; likely cause: a schedule that decayed it to nothing "
                         "(no float32 weight moves at that rate)")
    return _sentence(f"{outcome}: {_symptom(label, curve, numbers)}; no cause found in the recorded signals")


def _symptom(label: str, curve: Any, numbers: Mapping[str, Any]) -> str:
    """What the curve did, in words whose direction comes from the key numbers."""
    first, final = numbers.get("first_loss"), numbers.get("final_loss")
    ev = getattr(curve, "evidence", {}) or {}
    if label == "underfitting" and ev.get("kind") == "no_validation_progress":
        return (f"the validation loss never improved (best {ev['val_min']:.4g}, "
                f"{ev['val_drop_from_first']:.1%} below its first evaluation) while the training loss fell "
                f"{ev['relative_drop']:.1%}")
    if label == "underfitting" and ev.get("kind") == "validation_at_chance":
        return (f"the validation loss stays at ln({ev['chance_classes']})={ev['chance_loss']:.4g}, chance level "
                f"(median {ev['val_late_level']:.4g} late), while the training loss fell to {ev['train_late_level']:.4g}")
    if label == "underfitting" and ev.get("kind") == "short_validation_at_chance":
        return (f"the validation loss sits at ln({ev['chance_classes']})={ev['chance_loss']:.4g}, chance level, "
                f"at each of its {ev['evaluations']} evaluations")
    if label == "underfitting" and _finite(ev.get("chance_loss")):
        return (f"the loss sits at ln({ev['chance_classes']})={ev['chance_loss']:.4g}, chance level "
                f"(median {ev.get('late_level', final):.4g} late)")
    if label == "underfitting" and ev.get("kind") in ("short_frozen_accuracy", "frozen_accuracy"):
        return (f"the {ev.get('accuracy_of', 'training')} accuracy is {ev['accuracy']:.4g} at each of its last "
                f"{ev['frozen_points']} points "
                f"while the loss moved by {ev['loss_moved']:.0%}: the model predicts the same whatever it is shown")
    if label == "underfitting" and ev.get("kind") == "short_no_agreement":
        return (f"the Matthews correlation (or kappa) is exactly 0 at each of its {ev['agreement_points']} points: "
                "every prediction is one class")
    if label == "underfitting" and ev.get("kind") == "short_no_gradient":
        return (f"the gradient norm is exactly 0 at each of its last {ev['zero_grad_values']} values (from step "
                f"{ev['first_zero_step']:,}) while the loss is not: no gradient reaches the weights")
    if label == "underfitting" and ev.get("kind") == "short_stuck" and _finite(ev.get("late_level")):
        how = ("are all the same" if not ev.get("relative_band")
               else f"stay within {ev['relative_band']:.2%} of it" if ev["relative_band"] >= 5e-5
               else f"stay within {ev['relative_band']:.1e} of it")
        return f"the loss is stuck at {ev['late_level']:.6g}: its {ev['points']} printed values {how}"
    # The curve's own levels (medians) where it judged them: a noisy loss's first and last values
    # can say it fell by half while its levels say it rose.
    if label == "underfitting" and _finite(ev.get("start_level")) and _finite(ev.get("end_level")):
        first, final = ev["start_level"], ev["end_level"]
    if label == "underfitting" and _finite(first) and _finite(final) and first != 0:
        change = (final - first) / abs(first)
        # A loss that fell far and is underfitting for another reason (its held-out loss made no
        # progress) is told by that reason, not as a fall that was "only" most of its level.
        if change > -0.1:
            way = "rose" if change > 0 else "fell only"
            return f"the loss {way} {abs(change):.1%} (from {first:.4g} to {final:.4g})"
    return _lower(curve.reason.split("; likely cause:", 1)[0])


def _name(finding: Any) -> str:
    """The short name of a finding's code (its detector's title), in lower case."""
    from runlens.detectors import REGISTRY

    code = finding.code
    if code == "nonfinite_loss":  # its title is the symptom; the evidence says it was numerical
        return "a numerical fault in the loss"
    cls = REGISTRY.get(code)
    title = getattr(cls, "title", "") if cls is not None else ""
    return _lower(title) if isinstance(title, str) and title else code.replace("_", " ")


def _finite(x: object) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and np.isfinite(x)


def _lower(text: str) -> str:
    """A title as the tail of a sentence: lowercase first letter unless it starts an acronym."""
    text = text.strip().rstrip(".")
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


def _sentence(text: str) -> str:
    text = " ".join(text.split()).rstrip(".")
    return text[:1].upper() + text[1:] + "."
