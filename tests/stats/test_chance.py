"""runlens.stats.chance: the chance level ln K of a loss, and K read from the config."""

from __future__ import annotations

import math

from runlens.detectors.curve import chance_level


def test_chance_level_matches_ln_k_only_within_tolerance():
    assert chance_level(math.log(2))["chance_classes"] == 2
    assert chance_level(2.3026)["chance_classes"] == 10
    assert chance_level(0.5) is None
    assert chance_level(-1.0) is None
    assert chance_level(float("nan")) is None
    # Between ln 33 and ln 34: ambiguous without the config, exact with it.
    assert chance_level(3.511) is None
    assert chance_level(3.511, classes=33)["chance_classes"] == 33
