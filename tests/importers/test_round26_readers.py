"""Round 26: a metric that ends NaN/Inf beside a finite loss, in a loop's own print that only the
names beside the numbers read (found on the twelfth thread set's misses, a development set since its
one grading). The shapes are made up here in the spelling of a kind of loop, with silent twins.

The last reading (:mod:`runlens.io.importers.anyline`) keeps only the loss's numbers while a log
streams by; now it also keeps, for every other name, the tail of values that ends the log
non-finite (with the finite value before it), so ``nonfinite_metric`` can read it.

A one-number list after a name (``loss: [10.000229]``, Paddle's fetched loss) was read only when finite:
``loss: [nan]`` is that loss going NaN. An exception that says the gradients went non-finite
(``clip_grad_norm_``'s ``... for gradients ... is non-finite``, DyNet's ``Magnitude of gradient is bad: -nan``)
is a non-finite gradient event, and the crash decoder names its cause.
"""

from __future__ import annotations

import math

from logmaker import read_paste as _run

from runlens.analysis import analyze


def _policy(kl, entropy=None):
    entropy = kl if entropy is None else entropy
    return "".join(f"Policy training - Surrogate loss: {3.0 / (i + 1):.4f} KL divergence: {k} Entropy: {e} "
                   f"training epoch: {i} learning_rate: 0.0001\n" for i, (k, e) in enumerate(zip(kl, entropy,
                                                                                                 strict=True)))


def _codes(tmp_path, text):
    path = tmp_path / "log.txt"
    path.write_text(text)
    return {f.code: f for f in analyze(path).findings}


def test_a_metric_nan_on_every_line_beside_a_finite_loss_is_kept_and_found(tmp_path):
    run = _run(tmp_path, _policy(["nan"] * 7))
    assert math.isnan(run.column("scalars", "KL_divergence")[-1])
    f = _codes(tmp_path, _policy(["nan"] * 7))["nonfinite_metric"]
    assert f.severity == "warning" and f.evidence["nonfinite_lines"] == 7


def test_a_metric_that_breaks_mid_run_keeps_its_last_finite_value_and_is_an_error(tmp_path):
    text = _policy(["0.01", "0.02", "0.015", "nan", "nan", "nan", "nan"])
    run = _run(tmp_path, text)
    kl = run.scalars.column("KL_divergence")
    assert kl.null_count == 2  # the finite history before its last finite value is not kept
    assert 0.015 in run.column("scalars", "KL_divergence")
    f = _codes(tmp_path, text)["nonfinite_metric"]
    assert f.severity == "error" and f.evidence["finite_before"] == 1 and f.step == 3


def test_silent_twin_finite_metrics_are_not_kept(tmp_path):
    text = _policy(["0.01", "0.02", "0.015", "0.01", "0.02", "0.02", "0.01"])
    run = _run(tmp_path, text)
    assert run.column("scalars", "KL_divergence") is None
    assert "nonfinite_metric" not in _codes(tmp_path, text)


def test_silent_twin_a_metric_that_recovers(tmp_path):
    text = _policy(["0.01", "nan", "nan", "nan", "0.02", "0.02", "0.01"])
    assert "nonfinite_metric" not in _codes(tmp_path, text)


def _bracketed(values):
    return "".join(f"2022-12-08 17:57:{30 + i},371-INFO: Total iter: {10 * i}, epoch: 0, batch: {10 * i}, "
                   f"loss: [{v}]\n" for i, v in enumerate(values))


def test_a_nan_loss_in_a_one_number_list_is_read(tmp_path):
    # Paddle prints a loss fetched from the program as a one-element list: ``loss: [nan]`` is that loss.
    run = _run(tmp_path, _bracketed(["10.000229", "nan", "nan", "nan", "nan", "nan"]))
    loss = run.column("scalars", "loss")
    assert loss[0] == 10.000229 and all(math.isnan(v) for v in loss[1:])
    assert "nonfinite_loss" in _codes(tmp_path, _bracketed(["10.000229", "nan", "nan", "nan", "nan", "nan"]))


def test_silent_twin_finite_one_number_lists_and_a_bracketed_counter(tmp_path):
    run = _run(tmp_path, _bracketed(["10.000229", "9.8", "9.5", "9.1", "8.8", "8.7"]))
    assert list(run.column("scalars", "loss")) == [10.000229, 9.8, 9.5, 9.1, 8.8, 8.7]
    assert "nonfinite_loss" not in _codes(tmp_path, _bracketed(["10.000229", "9.8", "9.5", "9.1", "8.8", "8.7"]))


_CLIP_ERROR = ("RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite, so it "
               "cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, "
               "set `error_if_nonfinite=False`\n")


def test_an_exception_that_says_the_gradients_went_non_finite_is_a_gradient_event(tmp_path):
    text = "".join(f"step {i} loss {2.0 - 0.1 * i:.2f}\n" for i in range(6)) + _CLIP_ERROR
    run = _run(tmp_path, text)
    assert run.meta["status"] == "crashed"
    assert "nonfinite_grad" in set(run.events.column("kind").to_pylist())
    codes = _codes(tmp_path, text)
    assert codes["crash_other"].evidence["pattern"] == "nonfinite" and "nonfinite_gradient" in codes


def test_silent_twin_an_exception_about_something_else(tmp_path):
    text = "".join(f"step {i} loss {2.0 - 0.1 * i:.2f}\n" for i in range(6)) + (
        "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn\n")
    run = _run(tmp_path, text)
    assert run.events is None or "nonfinite_grad" not in set(run.events.column("kind").to_pylist())
