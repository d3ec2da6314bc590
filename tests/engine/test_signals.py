"""The signals stage: one definition of each derived series, computed once per run."""

from __future__ import annotations

import numpy as np
import pytest
from engine_runs import healthy, meta, write_healthy, write_run

from runlens import analyze
from runlens.analysis import first_nonfinite_step, projection
from runlens.detectors import REGISTRY, Context
from runlens.io.loader import load_run
from runlens.io.run import Run
from runlens.signals import signals_of
from runlens.testing import build_run


def _run(loss, *, skipped=None, grad_norm=None, steps=None, evals=None) -> Run:
    n = len(loss)
    # the clock runs 0, 1, 2... in row order even where the steps are out of order
    cols = {"step": np.arange(n) if steps is None else steps, "time": np.arange(n, dtype=float), "loss": loss,
            **({} if skipped is None else {"step_skipped": skipped}),
            **({} if grad_norm is None else {"grad_norm": grad_norm})}
    return build_run(tables={"scalars": cols, "evals": evals}, meta={}, name="x")


def test_a_null_loss_is_not_logged_and_not_a_nan():
    sig = signals_of(_run([1.0, None, 0.8, 0.7]))
    assert sig.loss.steps.tolist() == [0, 2, 3] and sig.first_nonfinite_step is None


def test_a_nonfinite_loss_on_a_skipped_step_does_not_count():
    sig = signals_of(_run([1.0, np.inf, 0.8, np.nan, 0.6], skipped=[0, 1, 0, 0, 0]))
    assert sig.first_nonfinite_step == 3 and sig.first_nonfinite_value != sig.first_nonfinite_value
    assert sig.loss.steps.tolist() == [0, 2] and sig.loss_logged.steps.tolist() == [0, 2, 3, 4]
    assert sig.nonfinite_loss_count == 1


def test_one_first_nonfinite_step_for_the_analysis_and_every_detector(tmp_path):
    cols = healthy(300, seed=1)
    s = cols["scalars"]
    s["step_skipped"] = np.zeros(300, dtype=np.int64)
    s["step_skipped"][10] = 1
    s["loss"] = s["loss"].copy()
    s["loss"][10] = np.inf  # on a skipped step: mixed precision as designed
    path = write_run(tmp_path / "r", run_meta=meta("r", layers=cols["layer_names"]), scalars=s,
                     layers=cols["layers"], evals=cols["evals"])
    run = load_run(path)
    d = analyze(run)
    assert first_nonfinite_step(run) is None
    assert d.curve.label == "healthy", d.curve.reason
    assert not [f.code for f in d.findings if f.severity == "error"]


def test_unsorted_steps_come_out_ordered():
    sig = signals_of(_run([0.5, 1.0, 0.7], steps=[2, 0, 1]))
    assert sig.loss.steps.tolist() == [0, 1, 2] and sig.loss.values.tolist() == [1.0, 0.7, 0.5]


def test_validation_holds_every_eval_set_primary_first(tmp_path):
    cols = healthy(200)
    ev = dict(cols["evals"])
    ev["val_loss@ood"] = ev["val_loss"] * 2
    ev["val_loss@train_subset"] = ev["val_loss"] * 0.5
    ev["accuracy"] = np.ones(len(ev["step"]))
    path = write_run(tmp_path / "r", run_meta=meta("r"), scalars=cols["scalars"], evals=ev)
    run = load_run(path, columns={"scalars": ["loss"], "evals": ["val_loss*"]})
    assert "accuracy" not in run.evals.column_names
    val = signals_of(run).validation
    assert list(val) == ["val_loss", "val_loss@ood", "val_loss@train_subset"]
    assert np.allclose(val["val_loss@ood"].values, 2 * val["val_loss"].values)


def test_grad_norm_leaves_out_skipped_steps_and_falls_back_to_layers(tmp_path):
    sig = signals_of(_run([1.0, 0.9, 0.8], skipped=[0, 1, 0], grad_norm=[1.0, np.inf, 2.0]))
    assert sig.grad_norm.steps.tolist() == [0, 2] and sig.grad_norm.source == "scalars.grad_norm"
    path = write_healthy(tmp_path / "h", n=100)
    run = load_run(path, columns={"scalars": ["loss"], "layers": ["grad_norm"]})
    gn = signals_of(run).grad_norm
    lay = signals_of(run).layers
    assert gn.source.startswith("layers.grad_norm")
    assert np.allclose(gn.values, np.sqrt((lay.grad_norm ** 2).sum(axis=1)))


def test_layer_matrices_depth_order_ratios_and_modules(tmp_path):
    path = write_healthy(tmp_path / "h", n=200, n_layers=4)
    lay = signals_of(load_run(path)).layers
    assert lay.names == tuple(f"layer{i}.weight" for i in range(4))
    assert lay.grad_norm.shape == (20, 4) and lay.steps.tolist() == list(range(0, 200, 10))
    assert np.allclose(lay.update_ratio, lay.update_norm / lay.weight_norm)
    assert lay.present("grad_norm").all() and not lay.grad_norm.flags.writeable
    mods = lay.modules("weight_norm", max_rows=5)
    assert mods.modules == tuple(f"layer{i}" for i in range(4)) and mods.values.shape == (5, 4)
    assert lay.modules("weight_norm", max_rows=5) is mods  # cached, shared by every detector


def test_signals_are_computed_once_and_handed_to_every_detector(tmp_path):
    seen = []

    class Spy(REGISTRY["no_validation"]):
        def check(self, run, ctx):
            seen.append((ctx.signals, ctx.signals_of(run), signals_of(run)))
            return []

    run = load_run(write_healthy(tmp_path / "h", n=100))
    analyze(run, detectors=[Spy(), Spy()])
    assert len(seen) == 2 and all(a is b is c for a, b, c in seen) and seen[0][0] is seen[1][0]
    assert seen[0][0].run is run


def test_a_hand_built_context_computes_signals_from_the_run():
    run = _run([1.0, 0.5])
    assert Context().signals_of(run) is signals_of(run)


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_projection_covers_what_signals_read(code):
    # The loss and skipped steps define the first non-finite step every detector cuts at.
    cols = projection([REGISTRY[code]()])
    assert {"loss", "step_skipped"} <= set(cols["scalars"])
