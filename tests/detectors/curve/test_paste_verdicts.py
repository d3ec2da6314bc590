"""Verdicts on logs that carry only a loss (console pastes, imported histories), found by probing
runlens with pastes in the formats of trainers it had not seen (LLM fine-tunes, vision trainers,
boosting and scikit-learn logs):

- a guessed class count needs more than a nearby level: a loss settling, over many steps of little
  noise, at 1.615 is not "at chance for 5 classes" (ln 5 = 1.609: 0.006 off, ten times its median's
  standard error, where a level 0.2 wide lands by coincidence 6% of the time), while a loss at ln K
  to the printed digits, or one that never left ln K, is;
- a short log creeping by hundredths of a percent at ln K is stuck at chance, though its few
  monotone points make a significant trend;
- with no step sizes logged, a per-epoch loss that made no progress and swings by a third of its
  level or more is unstable, not underfitting (whose advice, raise the rate, is the opposite fix);
  per-step values of a small batch swing that much from sampling alone and stay underfitting;
- the headline's numbers are the curve's own levels, not a noisy first and last value.

Each case has its twin that keeps the old reading.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from loss_synth import layers_table, make_run

from runlens import analyze
from runlens.io.loader import load_run


def _codes(d) -> list[str]:
    return [f.code for f in d.findings]


def settles_at(level: float, seed: int, *, start: float = 2.3, n: int = 300, sd: float = 0.004) -> np.ndarray:
    """Falls from ``start`` to ``level`` in the first third, then sits there with small noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    return level + (start - level) * np.exp(-t / 0.08) + rng.normal(0, sd, n)


@pytest.mark.parametrize("seed", range(4))
def test_a_loss_settling_near_a_guessed_ln_k_is_not_at_chance(seed):
    d = analyze(make_run(settles_at(math.log(5) + 0.006, seed)))
    assert "loss_at_chance" not in _codes(d) and d.curve.label == "healthy", (d.curve, _codes(d))


@pytest.mark.parametrize("seed", range(4))
def test_a_loss_at_ln_k_to_the_printed_digits_is_at_chance(seed):
    # The same fall, settling at ln 5 itself (a model predicting the uniform prior): at chance.
    d = analyze(make_run(np.round(settles_at(math.log(5), seed, sd=0.0002), 4)))
    assert "loss_at_chance" in _codes(d) and d.curve.label == "underfitting"
    [f] = [f for f in d.findings if f.code == "loss_at_chance"]
    assert f.evidence["chance_classes"] == 5


@pytest.mark.parametrize("seed", range(4))
def test_a_loss_that_never_left_a_guessed_ln_k_is_at_chance(seed):
    # The same offset from ln 5, but from its first steps on: the run never left chance.
    d = analyze(make_run(settles_at(math.log(5) + 0.006, seed, start=math.log(5) + 0.006)))
    assert "loss_at_chance" in _codes(d)


def test_a_stated_class_count_needs_no_coincidence_test():
    run = make_run(settles_at(math.log(5) + 0.006, 0))
    run.meta["config"] = {"num_classes": 5}
    assert "loss_at_chance" in _codes(analyze(run))


CREEP = "\n".join(f"Iteration {i + 1}, loss = {v}" for i, v in
                  enumerate(["0.69322", "0.69318", "0.69316", "0.69315", "0.69315"])) + "\n"


def test_a_short_log_creeping_at_ln_2_is_stuck_at_chance(tmp_path):
    path = tmp_path / "mlp.txt"
    path.write_text(CREEP)
    d = analyze(load_run(path))
    assert d.curve.label == "underfitting" and "loss_at_chance" in _codes(d)
    assert d.curve.evidence["kind"] == "short_stuck"
    assert "sits at ln(2)" in d.headline


def test_the_same_creep_away_from_ln_k_is_not_stuck(tmp_path):
    # A monotone creep within 1% of a level that is no ln K keeps its trend: too few points to say.
    path = tmp_path / "mlp.txt"
    path.write_text(CREEP.replace("0.693", "0.803"))
    d = analyze(load_run(path))
    assert d.curve.label == "insufficient_data" and "loss_at_chance" not in _codes(d)


def swings(seed: int, spread: float, *, n: int = 40, level: float = 1.6) -> np.ndarray:
    """A flat level with independent multiplicative swings of ``spread`` (log-scale sd)."""
    return level * np.exp(np.random.default_rng(seed).normal(0, spread, n))


def per_epoch(x: np.ndarray):
    run = make_run(x)
    run.meta["config"] = {"index_kind": "epoch"}  # what the readers set for a log of epochs
    return run


@pytest.mark.parametrize("seed", range(5))
def test_without_step_sizes_large_swings_of_epoch_values_with_no_progress_are_unstable(seed):
    d = analyze(per_epoch(swings(seed, 0.9)))
    assert d.curve.label == "unstable", d.curve
    assert "underfitting" not in _codes(d)


@pytest.mark.parametrize("seed", range(5))
def test_the_same_swings_of_per_step_values_stay_underfitting(seed):
    # A batch of a few samples swings by its own level from sampling alone (the small-batch tests).
    d = analyze(make_run(swings(seed, 0.9)))
    assert d.curve.label == "underfitting", d.curve


@pytest.mark.parametrize("seed", range(5))
def test_without_step_sizes_small_jitter_of_epoch_values_with_no_progress_stays_underfitting(seed):
    d = analyze(per_epoch(swings(seed, 0.05)))
    assert d.curve.label == "underfitting", d.curve


@pytest.mark.parametrize("seed", range(3))
def test_with_small_logged_steps_large_swings_stay_underfitting(seed):
    # The steps decide where they were logged: weights that move a ten-thousandth per step cannot
    # throw the loss about, so its swings are the batches' (a batch of 4).
    x = swings(seed, 0.9, n=200)
    layers, meta = layers_table(200, 1e-4)
    d = analyze(make_run(x, layers=layers, meta={"name": "small-steps", "layers": meta}))
    assert d.curve.label == "underfitting", d.curve


def test_the_headline_reads_the_curves_levels(tmp_path):
    # A first value of 2.31 and a last of 1.01 around a level that rose: not "fell 56%".
    values = [2.31, 1.62, 1.20, 2.1154, 2.1265, 1.2588, 0.8344, 0.5507, 0.9938, 1.0395, 0.5423, 0.5456,
              2.9956, 1.6092, 0.7611, 1.0900, 2.8644, 2.4975, 2.2694, 1.0100]
    path = tmp_path / "swing.txt"
    path.write_text("".join(f"epoch {i + 1} loss {v:.4f}\n" for i, v in enumerate(values)))
    d = analyze(load_run(path))
    assert "56" not in d.headline and "fell only" not in d.headline



def fell_then_swings(seed: int, spread: float, *, n: int = 45) -> np.ndarray:
    """Falls 4.0 -> 0.8 in nine epochs, then swings by ``spread`` (log-scale sd) around 0.75: the
    fall is large next to the swings (no "fluctuates by more than it improved")."""
    head = np.array([4.0, 3.9, 3.8, 3.6, 3.3, 2.5, 1.6, 1.1, 0.85])
    return np.concatenate([head, swings(seed, spread, n=n - head.size, level=0.75)])


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(("epochs", "spread", "swinging"), [
    (True, 0.6, True),  # fires: epoch values swinging by a third after progress
    (True, 0.03, False),  # silent twin: they settle with small jitter (healthy)
    (False, 0.6, False),  # silent twin: per-step values are never unstable by their swings alone
])
def test_epoch_values_swinging_by_a_third_after_progress_are_unstable(seed, epochs, spread, swinging):
    x = fell_then_swings(seed, spread)
    d = analyze(per_epoch(x) if epochs else make_run(x))
    assert (d.curve.evidence.get("kind") == "swinging") == swinging, d.curve
    if epochs:
        assert d.curve.label == ("unstable" if swinging else "healthy"), d.curve


@pytest.mark.parametrize("seed", range(3))
def test_silent_twin_a_second_drop_after_a_plateau_is_no_swing(seed):
    """Per-epoch values that fall, sit on a plateau, then fall steeply again (a rate step, grokking):
    the late spread is the fall itself, far above the end level, and is progress."""
    i = np.arange(40)
    x = np.where(i < 10, 2.3 * np.exp(-i / 3) + 0.6, np.where(i < 28, 0.62, 0.62 * np.exp(-(i - 28) / 3) + 0.05))
    x = x * np.exp(np.random.default_rng(seed).normal(0, 0.01, i.size))
    d = analyze(per_epoch(x))
    assert d.curve.label == "healthy", d.curve


def _hf_lines(tmp_path, rows: list[tuple[str, str]]):
    path = tmp_path / "trainer.log"
    path.write_text("".join(f"{{'loss': {loss}, 'grad_norm': {g}, 'learning_rate': 2e-05, 'epoch': {0.1 * i:.2f}}}\n"
                            for i, (loss, g) in enumerate(rows, 1)))
    return analyze(load_run(path))


def test_a_loss_and_gradient_that_collapse_to_exactly_zero_for_good_diverged(tmp_path):
    """{'loss': 0.0, 'grad_norm': 0.0} from the third log on, after 2.15: no training signal is left (every
    label masked, a NaN replaced by 0); a loss that trains to 0 gets there by orders of magnitude."""
    d = _hf_lines(tmp_path, [("2.1534", "4.1"), ("2.1201", "3.9")] + [("0.0", "0.0")] * 8)
    assert d.curve.label == "diverged" and d.curve.evidence["zero_grad_step"] == 3
    assert "nonfinite_loss" not in _codes(d)


@pytest.mark.parametrize("rows", [
    [("2.15", "4.1"), ("0.2", "1.0"), ("0.01", "0.1"), ("0.0003", "0.002")] + [("0.0", "0.0")] * 6,  # trained to 0
    [("2.15", "4.1"), ("2.12", "3.9")] + [("0.0", "0.0")] * 4 + [("1.9", "3.0")] * 4,  # came back
    [("2.15", "4.1"), ("2.12", "3.9")] + [("0.0", "0.5")] * 8,  # the gradient is still there
])
def test_silent_twin_zero_loss_reached_by_training_or_not_for_good_is_not_a_collapse(tmp_path, rows):
    assert _hf_lines(tmp_path, rows).curve.label != "diverged"
