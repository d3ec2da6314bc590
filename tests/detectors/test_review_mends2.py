"""Refactors from a review, whose rules these tests pin where a second copy could drift or a shortcut
could go wrong:

- the per-epoch swing rule is one helper for the curve's ``chaotic`` (no progress) and ``swinging``
  (after progress) readings;
- four strictly rising evaluations get p = 1/4! without enumerating the orders: the value the
  enumeration gives;
- a block of ``key value`` lines is counted by names.py's counting words (one vocabulary);
- data_not_shuffled asks the learning rate only once the loss repeats with the epoch: the lr's veto
  still reaches a loss that does.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from gradients_synth import check
from loss_synth import healthy, make_run

from runlens.detectors.curve import CurveClassifier
from runlens.detectors.curve.underfitting import chaotic, epoch_swings
from runlens.io.reader import blocks
from runlens.io.reader.names import COUNT_WORDS, EPOCH_WORDS, STEP_WORDS, names_count, tokens
from runlens.stats.evals import FEW_EVALS, _few_evals, _mk_after_min


def _features(spread: float, end: float, *, per_epoch: bool = True) -> dict:
    # ``late_step_ratio`` memoised as None: no step sizes logged.
    return {"per_epoch": per_epoch, "end_level": end, "late_spread": spread, "late_step_ratio": None}


@pytest.mark.parametrize(("spread", "end", "per_epoch", "swings"), [
    (1.0, 3.0, True, True),     # fires: a spread of a third of the end level
    (0.99, 3.0, True, False),   # silent twin: just under a third
    (1.0, -3.0, True, True),    # a negative level (a log-likelihood) is read by its size
    (1.0, 3.0, False, False),   # silent twin: a per-step log swings that much alone
])
def test_one_swing_rule_reads_no_progress_and_progress_alike(spread, end, per_epoch, swings):
    cfg = CurveClassifier()
    f = _features(spread, end, per_epoch=per_epoch)
    assert epoch_swings(cfg, f, None, spread) is swings
    assert chaotic(cfg, f, None) is swings  # the no-progress reading is the same rule on the late spread


def test_a_loss_ending_at_zero_is_not_chaotic():
    assert chaotic(CurveClassifier(), _features(1.0, 0.0), None) is False


@pytest.mark.parametrize("vl", [[1.0, 1.1, 1.2, 1.3], [0.5, 0.51, 0.9, 3.0], [-3.0, -2.0, -1.0, 0.0],
                                [2.0, 2.0000001, 7.0, 7.5]])
def test_four_rising_evaluations_get_the_enumerated_p(vl):
    v = np.array(vl)
    observed = _mk_after_min(v, FEW_EVALS - 1)
    orders = list(itertools.permutations(vl))
    enumerated = sum(_mk_after_min(np.array(o), FEW_EVALS - 1) >= observed for o in orders) / len(orders)
    got = _few_evals(np.arange(4), v)
    assert got is not None and got["val_perm_p"] == got["val_trend_p"] == enumerated == 1 / 24


def test_a_four_that_does_not_rise_at_each_evaluation_is_none():
    assert _few_evals(np.arange(4), np.array([1.0, 1.2, 1.1, 1.3])) is None


def test_every_counter_word_counts_a_block_but_the_short_ones():
    whole = set(STEP_WORDS) | {w for (w,) in EPOCH_WORDS}
    assert whole - COUNT_WORDS == {"it", "ep"}
    assert names_count(tokens("time/total_timesteps")) and names_count(tokens("train/n_updates"))
    assert not names_count(tokens("rollout/ep_len_mean")) and not names_count(tokens("it/s"))


def _dumps(keys: dict[str, object]) -> list[str]:
    lines = []
    for i in range(1, 6):
        lines += [f"{k}: {v(i) if callable(v) else v}" for k, v in keys.items()] + [""]
    return lines


def test_blocks_are_counted_by_a_counting_word():
    table = blocks.read(_dumps({"n_updates": lambda i: 10 * i, "loss": lambda i: f"{1 / i:.3f}"}))
    assert table is not None and table.counter == "n_updates"


def test_an_episode_length_does_not_count_blocks():
    table = blocks.read(_dumps({"ep_len_mean": lambda i: 20 + 5 * i, "loss": lambda i: f"{1 / i:.3f}"}))
    assert table is not None and table.counter is None


def _epoch_run(lr: np.ndarray | None):
    n, period = 600, 25
    t = np.arange(n)
    loss = healthy(n, 0) * np.exp(0.3 * np.cos(np.pi * (t % period) / period))
    return make_run(loss, lr=lr, scalars={"epoch": t // period})


def test_a_loss_repeating_with_the_epoch_fires_under_a_smooth_schedule():
    t = np.arange(600)
    assert [f.code for f in check("data_not_shuffled", _epoch_run(None))] == ["data_not_shuffled"]
    decay = 0.05 * 0.5 * (1 + np.cos(np.pi * t / t.size)) + 1e-5
    assert [f.code for f in check("data_not_shuffled", _epoch_run(decay))] == ["data_not_shuffled"]


def test_a_schedule_repeating_with_the_epoch_still_explains_the_loss():
    t = np.arange(600)
    restarts = 0.05 * 0.5 * (1 + np.cos(np.pi * (t % 25) / 25)) + 1e-5
    assert check("data_not_shuffled", _epoch_run(restarts)) == []
