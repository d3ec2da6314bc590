"""Round 32's readers, from the eighteenth thread set's misses (a development set since its one grading in
round 31): each shape on a synthetic log of its own, with a silent twin.

- the last reading of a loop's print (by the names beside its numbers) reads the lines' words too: TF's
  ``Model diverged with loss = NaN.`` after finite losses is a non-finite loss;
- a loss printed before the step marker, other fields after it (arcface_torch's ``Loss 44.1 ... Global
  Step: 2750 Fp16 Grad Scale: 12800``), is read;
- a throughput's unit (``463.03 samples/sec``) is its value's, not the next name's first word;
- a column named a perplexity whose values are below 1 (a log probability) is no perplexity;
- a held-out column of the quantity a lone series is read as (``test bits_per_dim`` beside ``train
  bits_per_dim``) is the validation loss.
"""

from __future__ import annotations

import math

from runlens import analyze
from runlens.io.importers._textline import read_fields
from runlens.io.loader import load_run


def _write(tmp_path, lines, name="train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _codes(d):
    return {f.code for f in d.findings}


# -- a stepless line's words, in the last reading ---------------------------------------------------

_PROGRESS = "{i}/200000 = 0.0%, SPS: 0.1, ELAP: {e}, ETA: 20 days, 1:12:59 - loss: {v}"


def _electra(tail):
    return [_PROGRESS.format(i=i, e=20 + i, v=v) for i, v in enumerate((44.4968, 44.3760, 44.5174, 44.1623), 1)] + tail


def test_a_loss_said_nan_in_words_after_the_last_progress_line_diverged(tmp_path):
    d = analyze(str(_write(tmp_path, _electra(["ERROR:tensorflow:Model diverged with loss = NaN."]))))
    assert "nonfinite_loss" in _codes(d)
    assert d.curve.label == "diverged"


def test_silent_twin_words_that_say_no_nan_add_nothing(tmp_path):
    d = analyze(str(_write(tmp_path, _electra(["INFO:tensorflow:Loss is finite, saving checkpoint."]))))
    assert "nonfinite_loss" not in _codes(d)
    assert d.curve.label != "diverged"


# -- the loss before the step marker -----------------------------------------------------------------

def _arcface(losses, scale="Fp16 Grad Scale: {s}"):
    return [f"Training: 2021-08-18 06:00:{10 + i:02d},232-Speed 461.27 samples/sec   Loss {v}   LearningRate 0.0781   "
            f"Epoch: 0   Global Step: {2750 + 50 * i}   " + scale.format(s=12800 if v == v else 0) + "   Required: 236 hours"
            for i, v in enumerate(losses)]


def test_a_loss_before_the_step_marker_is_read(tmp_path):
    run = load_run(_write(tmp_path, _arcface([44.1258, 43.0147, float("nan")])))
    values = run.column("scalars", "loss").tolist()
    assert values[:2] == [44.1258, 43.0147] and math.isnan(values[2])
    assert run.column("scalars", "step").tolist() == [2750, 2800, 2850]


def test_silent_twin_a_loss_after_the_marker_keeps_the_fields_after_it(tmp_path):
    lines = [f"Epoch: 0 Global Step: {2750 + 50 * i} Loss {v} LearningRate 0.0781" for i, v in enumerate((4.4, 4.3, 4.1))]
    run = load_run(_write(tmp_path, lines))
    assert run.column("scalars", "loss").tolist() == [4.4, 4.3, 4.1]


def test_a_throughputs_unit_is_its_values():
    assert read_fields("Speed 463.03 samples/sec   Loss 44.1258") == [("Speed (samples/sec)", 463.03), ("Loss", 44.1258)]
    assert read_fields("872-Speed 463.03 samples/sec Loss 44.1258")[-1] == ("Loss", 44.1258)


def test_silent_twin_a_ratio_that_is_no_rate_stays_a_name():
    # "tp/fp" divides two counts, not by a time: the word after the number is the next name's.
    assert read_fields("recall 0.5 tp/fp 3.0") == [("recall", 0.5), ("tp/fp", 3.0)]


# -- a perplexity below 1 -----------------------------------------------------------------------------

def _im2latex(ppls):
    lines = []
    for e, (loss, ppl) in enumerate(zip((1.68, 0.32, 0.29), ppls, strict=True), start=1):
        lines += [f"Epoch {e}/15", f"- Training:  - 3669s - loss: {loss} - lr: 0.0001",
                  f"- Eval: BLEU-4 69.10 - EM 9.93 - perplexity {ppl}"]
    return lines


def test_a_negative_perplexity_is_no_validation_loss(tmp_path):
    d = analyze(str(_write(tmp_path, _im2latex((-1.60, -1.70, -1.68)))))
    assert not _codes(d) & {"nonfinite_validation"}


def test_silent_twin_a_perplexity_is_the_validation_losss_exp(tmp_path):
    run = load_run(_write(tmp_path, _im2latex((5.0, 4.1, 3.6))))
    assert [round(v, 6) for v in run.column("evals", "val_loss").tolist()] == [round(math.log(v), 6) for v in (5.0, 4.1, 3.6)]


# -- the held-out twin of a lone series ---------------------------------------------------------------

def _pixelcnn(test):
    return [f"Iteration {i}, time = 2875s, train bits_per_dim = {tr}" + (f", test bits_per_dim = {te}" if test else "")
            for i, (tr, te) in enumerate(((4.3207, 9.4122), (3.8210, 9.4122), (3.6672, 9.4122)))]


def test_a_held_out_column_of_the_lone_series_quantity_is_the_validation_loss(tmp_path):
    d = analyze(str(_write(tmp_path, _pixelcnn(True))))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_frozen_validation"


def test_silent_twin_no_held_out_column_no_validation_loss(tmp_path):
    run = load_run(_write(tmp_path, _pixelcnn(False)))
    assert run.column("scalars", "loss").tolist() == [4.3207, 3.8210, 3.6672]
    assert analyze(run).curve.label == "insufficient_data"


# -- an accuracy beside the loss, in the last reading ----------------------------------------------------

def _theano(accuracy):
    lines = []
    for e, (tr, va) in enumerate(((2.53406, 2.31201), (2.31219, 2.30231), (2.30794, 2.29973), (2.3053, 2.30304),
                                  (2.30405, 2.30362), (2.30328, 2.30223))):
        lines += [f"INFO:root:[Tag] init, [Epoch] {e}, [Training error] {tr}, [Duration] 56.1",
                  f"INFO:root:[Tag] init, [Epoch] {e}, [Validation error] {va}, [Validation accuracy] {accuracy[e]}"]
    return lines


def test_a_loss_at_ln_10_beside_an_accuracy_of_a_tenth_learnt_nothing(tmp_path):
    path = _write(tmp_path, _theano([0.10651, 0.11004, 0.10651, 0.10651, 0.10651, 0.10651]))
    assert load_run(path).column("evals", "val_accuracy").tolist()[-1] == 0.10651
    d = analyze(str(path))
    assert d.curve.label == "underfitting" and "loss_at_chance" in _codes(d)


def test_silent_twin_an_accuracy_that_rose_is_no_chance(tmp_path):
    d = analyze(str(_write(tmp_path, _theano([0.31, 0.42, 0.51, 0.57, 0.61, 0.64]))))
    assert "loss_at_chance" not in _codes(d)
