"""The documentation of every finding code ``runlens compare`` (and ``audit --baseline``) emits.

Plain data, written once: the reference catalog (``runlens explain``,
docs/detectors.md, the reports) reads it, and the checks take their advice
from "What to try". Parameters are fields of
:class:`runlens.compare.model.Thresholds`.
"""

from __future__ import annotations

_PARAMS_LEVEL = ("alpha: significance level of the one-sided test. min_change: smallest relative change "
                 "that counts. error_change: relative change from which it is an error, not a warning. "
                 "window, min_window: share and least number of the last shared steps compared.")

CODES: dict[str, dict[str, str]] = {
    "baseline_regression_loss": {
        "severity": "warning",
        "title": "The final training loss is worse than the baseline's beyond run-to-run noise.",
        "What it detects": "The run's training loss over the last window of the steps both runs "
                           "reached is higher than the baseline's over the same steps.",
        "Why it matters": "A run that ends at a higher loss than the recipe it replaces is a "
                          "regression, even when nothing crashed.",
        "How it decides": "One-sided Mann-Whitney U on the last window of shared steps (Welch's t "
                          "below 5 points a side), Cliff's delta as the effect size, and a relative "
                          "change of at least min_change that is also a share of the baseline's own "
                          "improvement. An error from error_change on.",
        "What to try": "Diff the run's config against the baseline's (learning rate, schedule, batch "
                       "size, data); rerun both with another seed if the change is close to the threshold.",
        "Parameters": _PARAMS_LEVEL,
    },
    "baseline_regression_val_loss": {
        "severity": "warning",
        "title": "The final validation loss is worse than the baseline's beyond evaluation noise.",
        "What it detects": "The validation loss of the last evaluations is higher than the baseline's.",
        "Why it matters": "Validation loss is what the model is for; a higher one is a regression "
                          "even when the training loss looks fine.",
        "How it decides": "As baseline_regression_loss, on the evaluations: a quarter of them (at "
                          "least 5) when both runs evaluated on the same steps, else each run's own "
                          "last evaluations.",
        "What to try": "Diff the configs; a changed regularization (dropout, weight decay), data "
                       "split or augmentation moves validation loss without moving training loss.",
        "Parameters": _PARAMS_LEVEL,
    },
    "baseline_slower_convergence": {
        "severity": "warning",
        "title": "The run needs many more steps than the baseline to reach the same loss.",
        "What it detects": "The step at which the smoothed loss first reaches the level where the "
                           "baseline completed a share of its improvement, against the baseline's step.",
        "Why it matters": "Slower convergence costs compute, and often hides a changed learning rate "
                          "or warmup.",
        "How it decides": "Both curves smoothed with a rolling median; slower when the run needs "
                          "slow_ratio times the baseline's steps, or never gets there.",
        "What to try": "Compare the learning rate, warmup and batch size with the baseline's config; "
                       "a changed initialization or data order also slows the start.",
        "Parameters": "fraction: share of the baseline's improvement that sets the target loss. "
                      "slow_ratio: how many times the baseline's steps counts as slower.",
    },
    "baseline_new_nonfinite": {
        "severity": "error",
        "title": "The loss or gradient norm became NaN/Inf, which the baseline never did.",
        "What it detects": "A non-finite loss, or a non-finite gradient norm on a step a loss scaler "
                           "did not skip, in the run but never in the baseline.",
        "Why it matters": "A NaN ends learning; one the baseline never had comes from the change.",
        "How it decides": "The first non-finite step of each run, over all their steps.",
        "What to try": "Look at what changed against the baseline: a higher learning rate, a removed "
                       "gradient clip, mixed precision without a loss scaler, a new layer or loss term.",
        "Parameters": "None.",
    },
    "baseline_new_spikes": {
        "severity": "warning",
        "title": "More loss spikes than the baseline, beyond chance.",
        "What it detects": "Upward loss outliers (robust z-score above spike_z against a rolling "
                           "median) counted in both runs.",
        "Why it matters": "New spikes mean the change made training less stable.",
        "How it decides": "A one-sided exact binomial test on the two counts, given each run's number "
                          "of steps.",
        "What to try": "Spikes that the baseline did not have usually come from a higher learning "
                       "rate, a smaller batch, or bad examples in new data; try gradient clipping.",
        "Parameters": "spike_z: robust z-score above which a step is a spike. alpha: significance level.",
    },
    "baseline_gradient_shift": {
        "severity": "warning",
        "title": "Some layers' gradient norms moved by orders of magnitude against the baseline.",
        "What it detects": "Per layer, the median gradient norm of the run against the baseline's.",
        "Why it matters": "A change of gradient scale in some layers changes how fast they learn.",
        "How it decides": "A shift of gradient_orders orders of magnitude or more, either way.",
        "What to try": "A change of scale in some layers' gradients points at a changed "
                       "initialization, normalization, loss scale or learning rate for those parameters.",
        "Parameters": "gradient_orders: orders of magnitude (log10) that count as a shift.",
    },
}


def advice(code: str) -> str:
    """The "What to try" of ``code``, the default advice of its findings."""
    return CODES[code]["What to try"]
