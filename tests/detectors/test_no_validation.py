"""no_validation: an info finding for a run that logged no validation loss, silent when it did."""

from __future__ import annotations

from nonfinite_runs import findings_of, healthy_run


def test_no_validation_fires_as_info_only_without_evals():
    (f,) = findings_of("no_validation", healthy_run(evals=False))
    assert f.severity == "info" and f.step is None
    assert findings_of("no_validation", healthy_run()) == []
