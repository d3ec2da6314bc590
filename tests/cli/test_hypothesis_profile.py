"""Property tests cannot leave a failing example behind in the checkout (issue 13)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import settings
from hypothesis.configuration import storage_directory

ROOT = Path(__file__).resolve().parents[2]


def test_ci_profile_is_derandomized_without_a_database():
    ci = settings.get_profile("ci")
    assert ci.derandomize is True and ci.database is None


def test_nothing_of_hypothesis_is_stored_in_the_checkout():
    db = settings.get_profile("dev").database
    assert ROOT not in Path(db.path).resolve().parents
    assert ROOT not in Path(storage_directory("x").path).resolve().parents
    current = settings.default.database
    assert current is None or ROOT not in Path(current.path).resolve().parents
