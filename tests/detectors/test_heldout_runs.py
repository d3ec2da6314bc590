"""Issue 11's failure classes on real recorded runs of the held-out generator.

Every class has a firing run and a silent twin (the same model with the fault
taken out), trained in torch by ``benchmarks/heldout/train.py`` and read back
from disk by ``runlens.analyze``. Before a verdict is checked, the run must
show its fault in what the generator measured in torch: the generator's own
criteria (``benchmarks/heldout/criteria.py``, written without reading any
detector) where it has one for the class, a stated measurement otherwise.
The synthetic-series counterparts are ``test_curve_*``, ``test_loss_*`` and
``test_gradients_*``.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

pytest.importorskip("torch")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from heldout_runs import PAIRS, record  # noqa: E402

from benchmarks.heldout import criteria  # noqa: E402
from benchmarks.heldout.generate import context  # noqa: E402
from runlens import analyze  # noqa: E402


class Recorded:
    """A run trained once, its probe's measurements and runlens's analysis."""

    def __init__(self, run, path):
        self.run = run
        self.measured = record(run, path)
        self.analysis = analyze(path)
        self.codes = [f.code for f in self.analysis.findings]
        self.curve = self.analysis.curve.label

    def finding(self, code):
        return next(f for f in self.analysis.findings if f.code == code)

    def __repr__(self) -> str:  # what a failed assertion shows
        return f"<{self.run.name}: curve={self.curve} ({self.analysis.curve.reason}) findings={self.codes}>"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs(cls)`` trains the pair of a class once per module: (firing, twin)."""
    cache: dict[str, tuple[Recorded, Recorded]] = {}
    base = tmp_path_factory.mktemp("heldout")

    def get(cls: str) -> tuple[Recorded, Recorded]:
        if cls not in cache:
            cache[cls] = tuple(Recorded(run, base / run.name) for run in PAIRS[cls])
        return cache[cls]

    return get


def judged(kind: str, rec: Recorded, twin: Recorded | None = None) -> tuple[bool, dict]:
    """The generator's own criterion for ``kind`` on a recorded run's measurements."""
    ctx = context(kind, rec.run, None, twin.measured if twin else None)
    return criteria.CRITERIA[kind](rec.measured, ctx)


# -- criteria-confirmed classes: firing run has the fault, twin does not ----------------------

# class -> (generator criterion, finding code that must fire, curve label of the firing run or None)
CONFIRMED = {
    "chance": ("chance", "loss_at_chance", "underfitting"),
    "overfitting": ("overfitting", "overfitting", "overfitting"),
    "plateau": ("plateau", "plateau", None),
    "diverged": ("diverged", "diverged", "diverged"),
    "too_high": ("lr_too_high", "learning_rate_too_high", "unstable"),
    "exploding": ("exploding", "exploding_gradients", None),
    "vanishing": ("vanishing", "vanishing_gradients", "underfitting"),
    "late_variance": ("late_variance", "late_loss_variance", None),
}


@pytest.mark.parametrize("cls", sorted(CONFIRMED))
def test_firing_run_shows_its_fault_and_runlens_names_it(runs, cls):
    kind, code, curve = CONFIRMED[cls]
    fault, twin = runs(cls)
    ok, detail = judged(kind, fault, twin if kind == "lr_too_high" else None)
    assert ok, f"{fault.run.name} does not show {kind} in torch: {detail}"
    assert code in fault.codes, fault
    if curve is not None:
        assert fault.curve == curve, fault


@pytest.mark.parametrize("cls", sorted(CONFIRMED))
def test_silent_twin_lacks_the_fault_and_the_code(runs, cls):
    kind, code, curve = CONFIRMED[cls]
    _, twin = runs(cls)
    if kind != "lr_too_high":  # its criterion compares against a twin of its own
        ok, detail = judged(kind, twin)
        assert not ok, f"the twin {twin.run.name} still shows {kind}: {detail}"
    assert code not in twin.codes, twin
    if curve is not None:
        assert twin.curve != curve, twin


def test_noisy_validation_rising_after_its_minimum_is_overfitting_not_unstable(runs):
    fault, _ = runs("overfitting")
    assert "unstable" not in fault.codes, fault
    # No update-size evidence says the rate is too high: the rise is memorization.
    assert "learning_rate_too_high" not in fault.codes, fault


def test_too_high_rate_run_is_unstable_and_its_twin_is_not(runs):
    fault, twin = runs("too_high")
    assert "unstable" in fault.codes, fault
    assert twin.curve != "unstable" and "unstable" not in twin.codes, twin


# -- classes without a generator criterion: the measurement is stated here ---------------------

def test_a_loss_falling_99_percent_to_near_zero_is_not_unstable(runs):
    easy, contrast = runs("near_zero")
    fall = criteria.relative_fall(easy.measured["loss"])
    assert fall > 0.99, f"{easy.run.name} fell only {fall:.2%}"
    assert easy.curve == "healthy", easy
    assert "unstable" not in easy.codes, easy
    # The same model at 10x the rate jumps around for real: the label is still reachable.
    assert contrast.curve == "unstable" and "unstable" in contrast.codes, contrast


def _median(x: np.ndarray) -> float:
    return float(np.median(x[np.isfinite(x)]))


def test_a_jump_up_that_never_recovers_is_unstable_not_underfitting(runs):
    fault, twin = runs("jump")
    loss, at = fault.measured["loss"], int(fault.run.change_at * fault.run.steps)
    before, after = _median(loss[at - 50:at]), _median(loss[-100:])
    assert after > 1.2 * before, f"the loss did not settle higher: {before:.3g} -> {after:.3g}"
    assert fault.curve == "unstable", fault
    assert "unstable" in fault.codes and "underfitting" not in fault.codes, fault
    assert twin.curve == "healthy" and "unstable" not in twin.codes, twin


def test_growth_by_many_orders_of_magnitude_is_diverged(runs):
    fault, _ = runs("diverged")
    loss = fault.measured["loss"]
    assert np.isfinite(loss).all(), "the magnitude case must stay finite"
    head, _ = criteria.head_tail(loss)
    assert np.log10(loss.max() / head) >= 10, fault
    assert fault.curve == "diverged" and "unstable" not in fault.codes, fault


def test_recurrent_net_explosion_at_the_end_is_exploding_gradients(runs):
    fault, _ = runs("exploding")
    g = fault.measured["grad_norm"]
    assert fault.run.setup.task == "rnn"
    # The explosion is what ends the run: the largest gradient norms are in its last steps.
    assert int(np.argmax(g)) >= g.size - 10 and math.log10(criteria.growth(g)) >= 6
    assert fault.curve in ("diverged", "unstable"), fault


def test_one_step_gradient_norm_spike_is_flagged_and_its_twin_is_not(runs):
    fault, twin = runs("grad_norm_spike")
    g, at = fault.measured["grad_norm"], fault.run.spike_every
    others = np.concatenate([g[at - 50:at], g[at + 1:at + 51]])
    # One step, an order of magnitude above every step around it (a loss spike rides along).
    assert int(np.argmax(g)) == at and g[at] >= 10 * others.max()
    assert "grad_norm_spike" in fault.codes, fault
    assert "grad_norm_spike" not in twin.codes, twin


def test_a_dozen_steps_with_nan_give_nonfinite_loss(runs):
    fault, twin = runs("short_nan")
    loss = fault.measured["loss"]
    assert loss.size <= 14 and np.isnan(loss).any()
    assert "nonfinite_loss" in fault.codes, fault
    assert twin.measured["loss"].size <= 14 and np.isfinite(twin.measured["loss"]).all()
    assert "nonfinite_loss" not in twin.codes, twin
    assert twin.curve == "insufficient_data", twin


# -- round 3: a too-high rate that looks settled, collapsed weights, a transformer's first steps -------

def test_a_too_high_rate_with_a_settled_training_loss_is_unstable_from_its_step_sizes(runs):
    fault, twin = runs("settled_too_high")
    ok, detail = judged("lr_too_high", fault, twin)
    assert ok, f"{fault.run.name} does not show a too-high rate: {detail}"
    assert fault.curve == "unstable", fault
    assert fault.codes[0] == "learning_rate_too_high", fault
    ev = fault.finding("unstable").evidence
    assert ev["kind"] == "val_jumps" and ev.get("late_update_ratio", 1.0) > 1e-2, ev
    assert twin.curve != "unstable" and "learning_rate_too_high" not in twin.codes, twin


def test_weights_collapsed_by_weight_decay_lead_with_underfitting(runs):
    fault, twin = runs("weight_collapse")
    ok, detail = judged("underfitting", fault)
    assert ok, f"{fault.run.name} does not underfit: {detail}"
    # The bug's own finding (issue 21) leads; the underfitting verdict it explains comes next.
    assert fault.codes[0] == "weight_decay_collapse", fault
    under = fault.finding("underfitting")
    assert under.evidence["weight_norm_ratio"] <= 0.1 and "weight_decay 50" in under.title, under
    assert "weight_decay_collapse" in under.evidence["caused_by"], under
    for code in ("vanishing_gradients", "dead_layers", "loss_at_chance"):
        if code in fault.codes:
            assert "underfitting" in fault.finding(code).evidence.get("caused_by", ()), fault.finding(code)
    assert "underfitting" not in twin.codes, twin


def test_a_plateau_left_at_an_unchanged_rate_is_information_not_a_warning(runs):
    vit, other = runs("vit_start")
    for rec in (vit, other):
        for f in rec.analysis.findings:
            if f.code == "plateau":
                assert f.severity == "info" and f.evidence["lr_raised"] is False, f
        assert all(f.severity == "info" for f in rec.analysis.findings), rec
    # The injected plateau (a rate 1000x too low, then raised) stays a warning.
    stuck, _ = runs("plateau")
    assert stuck.finding("plateau").severity == "warning" and stuck.finding("plateau").evidence["lr_raised"], stuck
