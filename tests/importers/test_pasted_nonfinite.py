"""A pasted log whose printed loss stays finite while its words say a value went non-finite, or that
the run died (an exception line, a loss scaler that collapsed to 1), is never read as healthy and
finished. Each firing case has a silent twin: the same lines without the signal keep their reading."""

from __future__ import annotations

from runlens.analysis import analyze
from runlens.io.loader import load_run


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _codes(path):
    return {f.code: f for f in analyze(path).findings}


_D2 = [f"[03/02 14:32:{40 + i} d2.utils.events]:  eta: 0:48:31  iter: {1539 + 20 * i}  total_loss: {0.83 - 0.01 * i:.4f}"
       "  lr: 0.005" for i in range(3)]


def test_a_loss_became_nan_exception_crashes_the_run_at_the_step_it_names(tmp_path):
    path = _write(tmp_path, "d2.txt", [*_D2, "FloatingPointError: Loss became infinite or NaN at iteration=1587!"])
    run = load_run(path)
    assert run.status == "crashed" and run.error["type"] == "FloatingPointError"
    found = _codes(path)
    assert found["nonfinite_loss"].step == 1587
    assert "crash_other" in found


def test_the_same_log_without_the_exception_is_finished(tmp_path):
    path = _write(tmp_path, "d2.txt", _D2)
    assert load_run(path).status == "finished"
    assert not {"nonfinite_loss", "crash_other"} & set(_codes(path))


def test_an_exception_the_training_went_on_after_is_not_how_the_run_ended(tmp_path):
    lines = [*_D2[:2], "ValueError: could not parse the config comment, ignored", _D2[2]]
    assert load_run(_write(tmp_path, "go_on.txt", lines)).status == "finished"


_EPOCHS = [f"epoch {e}: train loss {1.0 - 0.03 * e:.3f}, val loss {1.05 - 0.02 * e:.3f}" for e in range(1, 19)]


def test_anomaly_mode_nan_in_a_backward_is_a_nonfinite_gradient(tmp_path):
    path = _write(tmp_path, "anomaly.txt", [*_EPOCHS, "Traceback (most recent call last):",
                                            '  File "train.py", line 88, in <module>',
                                            "    loss.backward()",
                                            "RuntimeError: Function 'LogSoftmaxBackward0' returned nan values "
                                            "in its 0th output."])
    assert load_run(path).status == "crashed"
    found = _codes(path)
    assert found["nonfinite_gradient"].step == 18 and "crash_other" in found


def test_an_out_of_memory_line_at_the_end_is_a_crash_oom(tmp_path):
    lines = [f"step {s} | loss {v}" for s, v in ((100, 0.83), (200, 0.81), (300, 0.82))]
    path = _write(tmp_path, "oom.txt", [*lines, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                                                "2.00 GiB (GPU 0; 23.69 GiB total capacity)"])
    assert "crash_oom" in _codes(path)
    twin = _write(tmp_path, "plain.txt", [*lines, "Error: trainer_state.json not found at /scratch/run"])
    assert load_run(twin).status == "finished" and "crash_oom" not in _codes(twin)


_KERAS = ["Epoch 1/3", "100/100 [==============================] - 1s 2ms/step - loss: 0.5000",
          "Epoch 2/3", "100/100 [==============================] - 1s 2ms/step - loss: 0.4000", "Epoch 3/3"]


def test_keras_terminate_on_nan_inside_an_epoch_is_a_nonfinite_loss_in_that_epoch(tmp_path):
    path = _write(tmp_path, "keras.txt", [*_KERAS, " 42/100 [===========>..................] - 0s 2ms/step - "
                                                   "loss: nanBatch 42: Invalid loss, terminating training"])
    assert _codes(path)["nonfinite_loss"].step == 3
    bare = _write(tmp_path, "keras_bare.txt", [*_KERAS, " 42/100 [===========>..................] - 0s 2ms/step"
                                                        " - loss: nan"])
    assert _codes(bare)["nonfinite_loss"].step == 3


def test_a_finite_progress_line_inside_an_epoch_stays_dropped(tmp_path):
    path = _write(tmp_path, "keras_ok.txt", [*_KERAS, " 42/100 [===========>..................] - 0s 2ms/step - "
                                                      "loss: 0.3500"])
    assert "nonfinite_loss" not in _codes(path)


def _hf(n):
    return [f"{{'loss': {3.5 - 0.05 * i:.4f}, 'grad_norm': 1.2, 'learning_rate': 4e-05, 'epoch': {0.05 * (i + 1):.2f}}}"
            for i in range(n)]


def _with_between(lines, warnings):
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        out.extend(warnings(i))
    return out


def test_a_loss_scale_that_collapses_to_zero_is_a_nonfinite_gradient(tmp_path):
    scales = iter(2.0 ** -k for k in range(-12, 60, 4))
    lines = _with_between(_hf(20), lambda i: [f"Gradient overflow.  Skipping step, loss scaler 0 reducing loss "
                                              f"scale to {next(scales)}"] if i >= 8 else [])
    found = _codes(_write(tmp_path, "apex.txt", lines))
    assert found["nonfinite_gradient"].step == 12  # the first overflow at a scale of 1 or below


def test_deepspeed_skipping_at_scale_one_is_a_nonfinite_gradient(tmp_path):
    ds = ("[2024-07-17 19:44:10,123] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 "
          "Skipping step. Attempted loss scale: {}, reducing to {}")
    lines = _with_between(_hf(20), lambda i: [ds.format(2 ** max(16 - i, 0), 2 ** max(15 - i, 0))] if i >= 10 else [])
    assert "nonfinite_gradient" in _codes(_write(tmp_path, "ds.txt", lines))


def test_occasional_overflows_while_the_scaler_finds_its_level_stay_silent(tmp_path):
    ds = ("[2024-07-17 19:44:10,123] [INFO] [loss_scaler.py:190:update_scale] [deepspeed] OVERFLOW! Rank 0 "
          "Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1")
    apex = "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {}"
    lines = _with_between(_hf(20), lambda i: {0: [ds], 3: [apex.format(32768.0)], 9: [apex.format(16384.0)]}
                          .get(i, []))
    assert not {"nonfinite_gradient", "nonfinite_loss"} & set(_codes(_write(tmp_path, "ok.txt", lines)))


def _megatron(skipped):
    return [f" iteration {s:8d}/  100000 | lm loss: {3.4 - 0.02 * i:.6E} | loss scale: 32768.0 | grad norm: 0.3 | "
            f"number of skipped iterations: {skipped(i):3d} | number of nan iterations:   0 |"
            for i, s in enumerate(range(10, 310, 10))]


def test_megatron_skipping_most_iterations_is_a_nonfinite_gradient(tmp_path):
    path = _write(tmp_path, "meg.txt", _megatron(lambda i: 10 if i >= 20 else 0))
    # The count covers the steps since the line before: put at that line's step, as test_nan_counter_lines does.
    assert _codes(path)["nonfinite_gradient"].step == 200


def test_megatron_skipping_an_iteration_now_and_then_stays_silent(tmp_path):
    path = _write(tmp_path, "meg_ok.txt", _megatron(lambda i: 1 if i in (3, 17) else 0))
    assert not {"nonfinite_gradient", "nonfinite_loss"} & set(_codes(path))


def test_hf_dict_lines_see_a_skipped_nan_warning_as_the_text_lines_do(tmp_path):
    warn = "[WARNING] loss is nan, skipping batch"
    hf = _write(tmp_path, "hf.txt", _with_between(_hf(25), lambda i: [warn] if i >= 12 else []))
    text = _write(tmp_path, "text.txt", _with_between(
        [f"iter {10 * i}: loss {3.5 - 0.05 * i:.4f}, time 100.00ms" for i in range(25)],
        lambda i: [warn] if i >= 12 else []))
    assert "nonfinite_loss" in _codes(hf) and "nonfinite_loss" in _codes(text)
    assert "nonfinite_loss" not in _codes(_write(tmp_path, "hf_ok.txt", _with_between(
        _hf(25), lambda i: ["[WARNING] tokenizer is slow, skipping the fast path"] if i >= 12 else [])))


def test_an_exception_after_the_last_hf_dict_crashes_the_run(tmp_path):
    path = _write(tmp_path, "hf_crash.txt", [*_hf(20), "Exception: Current loss scale already at minimum - cannot "
                                                       "decrease scale anymore. Exiting run."])
    assert load_run(path).status == "crashed"
    assert load_run(_write(tmp_path, "hf_fine.txt", _hf(20))).status == "finished"


_FAIRSEQ = ("| epoch 027 | loss 6.343 | nll_loss 4.984 | ppl 31.65 | num_updates 10198 | lr 0.000626 | gnorm 0.390 "
            "| loss_scale 0.500 | wall 23080")


def test_a_loss_scale_set_below_one_on_overflow_is_a_nonfinite_gradient(tmp_path):
    """fairseq's "overflow detected, setting loss scale to: 0.25": at a scale of 1 or less nothing is
    amplified, so the gradients overflow as computed and every update is skipped."""
    scales = [0.25 / 2 ** k for k in range(6)]
    path = _write(tmp_path, "fairseq.log", [_FAIRSEQ] + [f"| WARNING: overflow detected, setting loss scale to: {s}"
                                                          for s in scales])
    assert "nonfinite_gradient" in _codes(path)


def test_silent_twin_a_scaler_finding_its_level_high_above_one(tmp_path):
    scales = [65536.0 / 2 ** k for k in range(6)]
    path = _write(tmp_path, "fairseq.log", [_FAIRSEQ] + [f"| WARNING: overflow detected, setting loss scale to: {s}"
                                                          for s in scales])
    assert "nonfinite_gradient" not in _codes(path)
