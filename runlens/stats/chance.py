"""Is a loss at chance level: ln K, the loss of a classifier that predicts the uniform prior.

Pure numpy; knows nothing about runs (the class count, when the run states
one, is the caller's to find).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runlens.stats.robust import mad_sd
from runlens.stats.trend import trend

#: Number of classes searched when only the loss level can tell K.
MAX_LEVEL_CLASSES = 16

#: Above ``MAX_LEVEL_CLASSES`` the level tells K only when K is a round count, as a head's width
#: usually is (1024, 65536 = DINO's default, 1000 = ImageNet): a power of two or of ten, up to about
#: a million. Beyond, -ln of a clipping epsilon is the likelier reading of such a level: a sigmoid
#: saturated against Keras's 1e-7 scores 16.118 = ln 10^7 on every example, whatever its classes.
ROUND_CLASSES = tuple(sorted({2 ** n for n in range(5, 21)} | {10 ** n for n in range(2, 7)}))
#: Round counts per unit of ln K (powers of two 1/ln 2, of ten 1/ln 10): how densely a level
#: meets one by coincidence.
ROUND_DENSITY = 1 / math.log(2) + 1 / math.log(10)


#: ``classes`` for a loss that has no chance level: one read through an accuracy, an error rate or a reward.
NO_CHANCE = 0


def chance_level(value: float, *, classes: int | None = None,
                 rel_tol: float = 0.02) -> dict[str, Any] | None:
    """The K whose ln K is ``value`` (within ``rel_tol``), if it is unambiguous.

    With ``classes`` known only that K is tried, and a level above ln K
    counts up to half the gap to ln(K + 1): no prediction independent of the
    input does better than the prior, so a flat loss above it is no better
    than chance either (a prior learned imperfectly, an output still a
    little confident). Otherwise K = 2..16, and ``value`` must also be
    within a quarter of the gap to ln(K +- 1): the larger K are too close
    together to tell from a level alone.
    """
    if not math.isfinite(value) or value <= 0 or (classes is not None and classes < 2):
        return None  # fewer than 2 classes (NO_CHANCE: a loss read through an accuracy or a reward): no prior
    if classes is not None:
        best, tol = classes, rel_tol * math.log(classes)
        above = max(tol, 0.5 * (math.log(classes + 1) - math.log(classes)))
        if -tol <= value - math.log(best) <= above:
            return {"chance_classes": best, "chance_loss": math.log(best), "chance_tolerance": tol}
        return None
    else:
        if value > math.log(MAX_LEVEL_CLASSES + 1):
            return _round_level(value)
        k = int(round(math.exp(value)))
        nearest = min((kk for kk in (k - 1, k, k + 1) if 2 <= kk <= MAX_LEVEL_CLASSES),
                      key=lambda kk: abs(value - math.log(kk)), default=None)
        if nearest is None:
            return None
        best = nearest
        tol = min(rel_tol * math.log(best),
                  0.25 * (math.log(best + 1) - math.log(best)),
                  0.25 * (math.log(best) - math.log(max(best - 1, 1))))
    if abs(value - math.log(best)) > tol:
        return None
    return {"chance_classes": best, "chance_loss": math.log(best), "chance_tolerance": tol}


#: Largest robust sd of the late loss, as a share of ln K, when only the level tells K: a model
#: predicting the uniform prior scores ln K on every batch whatever its classes, so its loss varies
#: by batch only as far as its predictions stray from uniform. A language model's loss settling by
#: coincidence near ln 5 moves by a percent or more from one logged step to the next.
GUESSED_SPREAD = 0.005

#: Largest chance that a settled level falls that close to a guessed ln K by coincidence.
COINCIDENCE_ALPHA = 0.01


def _round_level(value: float) -> dict[str, Any] | None:
    if value > math.log(ROUND_CLASSES[-1]) + 1:  # exp would overflow on a blown-up loss
        return None
    best = min(ROUND_CLASSES, key=lambda k: abs(value - math.log(k)))
    tol = COINCIDENCE_ALPHA / (2 * ROUND_DENSITY)
    if abs(value - math.log(best)) > tol:
        return None
    return {"chance_classes": best, "chance_loss": math.log(best), "chance_tolerance": tol}


def level_coincidence(level: float, k: int, *, slack: float = 0.0) -> float:
    """How likely a level spread evenly over the gap around ln K lands at least this close to it.

    ``2 max(|level - ln K| - slack, 0) / gap``, the gap being the mean spacing of ln(K - 1), ln K,
    ln(K + 1), and ``slack`` the level's own uncertainty; above ``MAX_LEVEL_CLASSES`` the mean
    spacing of the round counts (``1 / ROUND_DENSITY``), the only K a level is read as there.
    """
    gap = 1 / ROUND_DENSITY if k > MAX_LEVEL_CLASSES else (math.log(k + 1) - math.log(max(k - 1, 1))) / 2
    return min(1.0, 2 * max(abs(level - math.log(k)) - slack, 0.0) / gap)


def chance_test(steps: np.ndarray, x: np.ndarray, classes: int | None, source: str | None,
                *, rel_tol: float = 0.02) -> dict[str, Any] | None:
    """Is the loss sitting at ln K, the loss of a classifier predicting the uniform prior?

    The level of the last third (median) must be within the tolerance of
    ln K, and its Theil-Sen line must not leave that band over the last
    third (a run passing through ln K on its way down is not at chance).
    When only the level tells K, the last third's robust sd must also be
    within ``GUESSED_SPREAD`` (0.5%) of ln K: the loss of a prior barely varies by batch;
    and either the level is so close to ln K (beyond its median's standard
    error) that a settled level lands there by coincidence with probability
    at most ``COINCIDENCE_ALPHA`` (:func:`level_coincidence`), or the loss started there too (the median
    of its first 5 values within the tolerance): a loss that fell from
    elsewhere and settled near some ln K is not shown to be at chance.
    """
    late = x[-max(5, x.size // 3):]
    level = float(np.median(late))
    hit = chance_level(level, classes=classes, rel_tol=rel_tol)
    if hit is None:
        return None
    t = trend(late, steps[-late.size:].astype(float))
    drift = abs(t.slope) * float(steps[-1] - steps[-late.size]) if math.isfinite(t.slope) else 0.0
    if drift > hit["chance_tolerance"]:
        return None
    spread = float(mad_sd(late))
    # From the level alone the match may be a coincidence (a language model
    # settling near 1.10 is not predicting 3 classes); a model predicting the
    # prior has almost no minibatch noise, its loss is ln K whatever the batch.
    if source is None and not spread <= GUESSED_SPREAD * hit["chance_loss"]:
        return None
    # The median's own standard error (1.2533 sd / sqrt n) is allowed for: a loss at ln K with
    # batch noise is off by about that much, and only the distance beyond it can be a coincidence.
    se = 1.2533 * spread / math.sqrt(late.size)
    coincidence = None if source is not None else level_coincidence(level, hit["chance_classes"], slack=se)
    if coincidence is not None:
        # A guessed K needs more than a nearby level: a loss that settles anywhere lands near some
        # ln K (they are 0.1 apart around K = 10). A model at chance predicts the prior exactly, so
        # its loss is ln K to the printed digits; or it never left ln K from its first steps on.
        start = float(np.median(x[:5]))
        if coincidence > COINCIDENCE_ALPHA and not abs(start - hit["chance_loss"]) <= hit["chance_tolerance"]:
            return None
    return {**hit, **({} if coincidence is None else {"level_coincidence_p": coincidence}), "chance_source": source or "the loss level (no class count in the log)",
            "late_level": level, "late_drift": drift, "late_spread_at_chance": spread}


def validation_at_chance(train_steps: np.ndarray, train: np.ndarray, val_steps: np.ndarray, val: np.ndarray,
                         classes: int, *, margin: float = 0.05, min_evals: int = 5) -> dict[str, Any] | None:
    """Did the held-out loss stay at ln K while the training loss left it (finite series, K stated)?

    The median of the later half of the evaluations between ``1 - margin``
    of ln K and half-way to ln(K + 1) (far above, the model is confidently
    wrong: memorisation that the overfitting reading judges), no evaluation
    below ``1 - 2 margin`` of ln K (a held-out loss that once learned and
    rose back learned something), and the training loss's median over the
    same steps at most ``1 - margin`` of that validation median. At least
    ``min_evals`` evaluations and 3 training losses over them.
    """
    if classes < 2 or val.size < min_evals or train.size < 10:
        return None
    late = val_steps >= val_steps[val.size // 2]
    level, chance = float(np.median(val[late])), math.log(classes)
    ceiling = chance + (math.log(classes + 1) - chance) / 2
    lowest = float(np.min(val))
    span = (train_steps >= val_steps[late][0]) & (train_steps <= val_steps[-1])
    if not (1 - margin) * chance <= level <= ceiling or lowest < (1 - 2 * margin) * chance or span.sum() < 3:
        return None
    level_train = float(np.median(train[span]))
    if level_train > (1 - margin) * level:
        return None
    return {"chance_classes": classes, "chance_loss": chance, "val_late_level": level, "val_lowest": lowest,
            "train_late_level": level_train, "evals": int(val.size), "late_evals": int(late.sum()),
            "first_late_step": int(val_steps[late][0]), "margin": margin}
