"""no_validation: an info finding for a run that logged no validation loss, silent when it did."""

from __future__ import annotations

from nonfinite_runs import findings_of, healthy_run


def test_no_validation_fires_as_info_only_without_evals():
    (f,) = findings_of("no_validation", healthy_run(evals=False))
    assert f.severity == "info" and f.step is None
    assert findings_of("no_validation", healthy_run()) == []


def test_no_validation_is_silent_on_a_run_whose_loss_went_nonfinite():
    # A run that diverged before its first evaluation: the NaN is the finding, not the missing held-out loss.
    import numpy as np
    from loss_synth import make_run

    x = np.r_[np.linspace(2.3, 2.0, 30), [np.nan, np.nan]]
    assert findings_of("no_validation", make_run(x)) == []
    assert [f.code for f in findings_of("no_validation", make_run(x[:30]))] == ["no_validation"]
