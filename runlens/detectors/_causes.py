"""Cause first: order a run's findings so the most likely root cause leads.

Findings are not independent: a learning rate too high throws the loss up
(spikes, instability, divergence), a NaN in the loss makes every gradient
NaN, a layer left out of the optimizer spikes the loss. ``LINKS`` says, for
each code, which codes can produce it (most likely first), with an optional
condition on the two findings' evidence. A finding whose cause is present
in the same diagnosis gets ``caused_by`` in its evidence; causes come
before their symptoms (the depth of a finding is the length of its longest
chain of present causes), then by step and code as before. Severity orders
the findings first, but a cause takes the rank of the most severe symptom
it explains: a warning-level learning rate that made the loss non-finite
(an error) leads that error; unrelated findings keep their severity's place. The curve verdict's reason names the root cause of a non-healthy
curve.

This is a small fixed graph of well-known mechanisms, not a statistical
model: it only orders and annotates what the detectors found, and never
adds or removes a finding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, overload

from runlens.detectors._updates import COLLAPSE
from runlens.diagnosis import SEVERITY_RANK, CurveVerdict, Finding

Condition = Callable[[Finding, Finding], bool]


def _explosion(symptom: Finding, cause: Finding) -> bool:
    """nonfinite_loss: only an explosion (not a numerical fault) has gradients as its cause."""
    return symptom.evidence.get("cause") != "numerical"


def _numerical(symptom: Finding, cause: Finding) -> bool:
    """A NaN born in the loss (healthy gradients before it) makes the gradients NaN."""
    return cause.evidence.get("cause") == "numerical"


def _always(symptom: Finding, cause: Finding) -> bool:
    return True


def _earlier(symptom: Finding, cause: Finding) -> bool:
    """The cause was under way first (weights that grow make logits, then gradients, grow)."""
    return cause.step is not None and (symptom.step is None or cause.step <= symptom.step)


def _weights_intact(symptom: Finding, cause: Finding) -> bool:
    """Small or zero gradients explain a stuck curve only while the weights are intact."""
    return not _collapsed(cause, symptom)


def _collapsed(symptom: Finding, cause: Finding) -> bool:
    """Weights pinned near zero (weight decay) starve every gradient and hold the loss at chance:
    the underfitting curve, whose evidence measured the collapse, is then the cause."""
    r = cause.evidence.get("weight_norm_ratio")
    return isinstance(r, (int, float)) and r <= COLLAPSE


_LR_HIGH = ("learning_rate_too_high", _always)
_STUCK = (("learning_rate_too_low", _always), ("vanishing_gradients", _weights_intact),
          ("dead_layers", _weights_intact))

#: symptom code -> ((cause code, condition), ...), most likely cause first.
LINKS: dict[str, tuple[tuple[str, Condition], ...]] = {
    "diverged": (_LR_HIGH, ("nonfinite_loss", _numerical), ("exploding_gradients", _always),
                 ("nonfinite_gradient", _always), ("nonfinite_loss", _always),
                 ("weight_norm_growth", _always)),
    "unstable": (_LR_HIGH, ("exploding_gradients", _always), ("grad_norm_spike", _always),
                 ("dead_layers", _always), ("late_loss_variance", _always)),
    "underfitting": (*_STUCK, ("loss_at_chance", _weights_intact)),
    "loss_at_chance": (*_STUCK, ("underfitting", _collapsed)),
    "vanishing_gradients": (("underfitting", _collapsed),),
    "dead_layers": (("underfitting", _collapsed),),
    "plateau": (("learning_rate_too_low", _always), ("vanishing_gradients", _always)),
    "loss_spikes": (_LR_HIGH, ("dead_layers", _always), ("grad_norm_spike", _always),
                    ("exploding_gradients", _always)),
    "late_loss_variance": (_LR_HIGH,),
    "exploding_gradients": (_LR_HIGH, ("weight_norm_growth", _earlier)),
    "weight_norm_growth": (_LR_HIGH,),
    "nonfinite_loss": (("exploding_gradients", _explosion), ("learning_rate_too_high", _explosion)),
    "nonfinite_gradient": (("nonfinite_loss", _numerical), ("exploding_gradients", _always),
                           _LR_HIGH),
    "grad_norm_spike": (_LR_HIGH,),
}

#: Training-loop bugs (issue 21): each names what a symptom above only describes. They are
#: prepended to a symptom's causes, so the bug leads when both it and a generic cause are present.
_NO_TRAINING = ("parameters_without_gradient", "parameters_not_in_optimizer", "lr_schedule_collapse",
                "clipping_removes_updates", "weight_decay_collapse")
_TOO_LARGE = ("inputs_not_normalized", "accumulation_unscaled", "gradients_accumulate")
BUG_LINKS: dict[str, tuple[str, ...]] = {
    "learning_rate_too_low": ("lr_schedule_collapse", "clipping_removes_updates"),
    # Gradients that pile up undo the progress a loss made (``progress_lost``); raw inputs leave a loss
    # that trains slowly on an ill-conditioned problem.
    "underfitting": (*_NO_TRAINING, "softmax_before_cross_entropy", "gradients_accumulate", "inputs_not_normalized"),
    "plateau": ("lr_schedule_collapse", "clipping_removes_updates", "softmax_before_cross_entropy"),
    "loss_at_chance": _NO_TRAINING,
    "unstable": ("weight_decay_collapse", "clipping_removes_updates", *_TOO_LARGE, "data_not_shuffled"),
    "diverged": _TOO_LARGE,
    "learning_rate_too_high": ("weight_decay_collapse", *_TOO_LARGE),
    "exploding_gradients": _TOO_LARGE,
    "nonfinite_loss": _TOO_LARGE,
    "loss_spikes": ("data_not_shuffled", *_TOO_LARGE),
    "late_loss_variance": ("data_not_shuffled", "accumulation_unscaled"),
    "dead_layers": ("weight_decay_collapse", "parameters_not_in_optimizer", "parameters_without_gradient",
                    "inputs_not_normalized"),
    "vanishing_gradients": ("weight_decay_collapse", "parameters_without_gradient"),
    "overfitting": ("validation_in_train_mode",),
    "grad_norm_spike": _TOO_LARGE,
}
for _symptom, _bugs in BUG_LINKS.items():
    LINKS[_symptom] = (*((b, _always) for b in _bugs), *LINKS.get(_symptom, ()))

CURVE_CODES = ("diverged", "unstable", "underfitting", "overfitting")


def causes_of(f: Finding, present: dict[str, Finding]) -> list[str]:
    """The codes among ``present`` that can have produced ``f`` (most likely first)."""
    out: list[str] = []
    for code, cond in LINKS.get(f.code, ()):
        cause = present.get(code)
        if cause is not None and cause is not f and code not in out and cond(f, cause):
            out.append(code)
    return out


@overload
def order_by_cause(findings: Iterable[Finding], curve: CurveVerdict,
                   key: Callable[[Finding], Any]) -> tuple[tuple[Finding, ...], CurveVerdict]: ...
@overload
def order_by_cause(findings: Iterable[Finding], curve: None,
                   key: Callable[[Finding], Any]) -> tuple[tuple[Finding, ...], None]: ...
def order_by_cause(findings: Iterable[Finding], curve: CurveVerdict | None,
                   key: Callable[[Finding], Any]) -> tuple[tuple[Finding, ...], CurveVerdict | None]:
    """``findings`` annotated with ``caused_by`` and ordered cause first.

    A cause sorts at the rank of the most severe symptom it explains; ``key``
    is the analysis's usual order (severity, step, code), kept among
    findings of the same rank and depth. The curve verdict comes back
    with its reason naming the root cause when its label has a finding.
    """
    found = list(findings)
    present: dict[str, Finding] = {}
    for f in sorted(found, key=key):
        present.setdefault(f.code, f)
    graph = {f.code: causes_of(f, present) for f in present.values()}
    # A cause can only point back at its symptom through a condition both
    # sides meet; break such a loop at the symptom side so the depth is finite.
    depth = {code: _depth(code, graph, ()) for code in graph}
    rank = _lead_rank(present, graph)
    out = [replace(f, evidence={**f.evidence, "caused_by": graph[f.code]}) if graph.get(f.code) else f
           for f in found]
    out.sort(key=lambda f: (rank.get(f.code, SEVERITY_RANK[f.severity]), depth.get(f.code, 0), key(f)))
    return tuple(out), _name_cause(curve, graph)


def _lead_rank(present: dict[str, Finding], graph: dict[str, list[str]]) -> dict[str, int]:
    """Each present code's sorting rank: its own severity's, or the most severe of the symptoms
    it explains (through any chain), so a warning-level cause leads the error it produced.

    Only a finding another one names as its cause is lifted; unrelated findings keep their
    severity's place, and a symptom never passes its cause (depth orders them within a rank).
    """
    rank = {code: SEVERITY_RANK[f.severity] for code, f in present.items()}
    changed = True
    while changed:  # relax along symptom -> cause edges until no rank improves (the graph is small)
        changed = False
        for symptom, causes in graph.items():
            for c in causes:
                if c in rank and rank[symptom] < rank[c]:
                    rank[c], changed = rank[symptom], True
    return rank


def _depth(code: str, graph: dict[str, list[str]], seen: Sequence[str]) -> int:
    if code in seen:
        return 0
    causes = graph.get(code, [])
    return 1 + max(_depth(c, graph, (*seen, code)) for c in causes) if causes else 0


def roots(code: str, graph: dict[str, list[str]]) -> list[str]:
    """The present root causes behind ``code`` (itself when nothing explains it)."""
    out: list[str] = []
    todo, seen = [code], set()
    while todo:
        c = todo.pop(0)
        if c in seen:
            continue
        seen.add(c)
        causes = graph.get(c, [])
        if not causes and c != code:
            out.append(c)
        todo.extend(x for x in causes if x not in seen)
    return out


#: Codes that restate the curve more precisely rather than explain it.
RESTATING = ("loss_at_chance",)


def _name_cause(curve: CurveVerdict | None, graph: dict[str, list[str]]) -> CurveVerdict | None:
    if curve is None or curve.label not in graph:
        return curve
    causes = [c for c in roots(curve.label, graph) if c not in RESTATING]
    if not causes:
        return curve
    return CurveVerdict(curve.label, f"{curve.reason}; likely cause: {', '.join(causes)}",
                        {**curve.evidence, "likely_cause": causes})
