"""Round 38's readings, from the twenty-fourth thread set (a development set since its one grading in
round 37):

- The role words of other languages (``loss entrenamiento``, ``loss validación``, ``训练损失``): read as
  their English words, so a Spanish course's overfitting run is read as one (both losses were summed
  as two parts of one loss before).
- A bracketed list of numbers in a printed table's cell (DeepXDE's ``[1.11e+00, 5.56e-01]``, one per
  term of the loss): one value, the sum of its terms; ``[]`` a missing value (the table was refused).
- A lone ``l`` is the tutorials' loss (``w = 1.09, l = 9.12``).
- A sweep's settings before the counter (``LR: 1000, Iter 10: 20.36``) leave the value after it alone.
- A Matthews correlation or kappa of exactly 0 at every print is a model that predicts one class.

Each has a silent twin.
"""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from runlens.io.importers import embedded
from runlens.io.importers._evalline import bare_value
from runlens.io.loader import load_run
from runlens.io.reader.names import tokens
from tests.importers.logmaker import write_lines

TRAIN = [0.0086, 0.0062, 0.0025, 0.0008, 0.0002]
VAL = [0.0092, 0.0103, 0.0308, 0.0467, 0.0511]


def _spanish(train_word="entrenamiento", val_word="validación"):
    return ["--- Entrenamiento ---"] + [
        f"{20 * (i + 1)}% Epoch {60 * (i + 1)}: loss {train_word}={t:.4f}, loss {val_word}={v:.4f}, exactitud=55.0%"
        for i, (t, v) in enumerate(zip(TRAIN, VAL, strict=True))]


@pytest.mark.parametrize(("name", "words"), [
    ("loss validación", ("loss", "val")), ("loss entrenamiento", ("loss", "train")),
    ("验证集损失", ("val", "loss")), ("训练损失", ("train", "loss")), ("Pérdida de validación", ("loss", "de", "val")),
    ("perte_validation", ("loss", "validation")), ("потери валидации", ("loss", "val"))])
def test_role_words_of_other_languages_are_read_as_english(name, words):
    assert tokens(name) == words


def test_a_spanish_courses_overfitting_run_is_read_as_one(tmp_path):
    run = load_run(write_lines(tmp_path, _spanish()))
    assert run.scalars.column("loss").to_pylist() == pytest.approx(TRAIN)
    assert run.evals.column("val_loss").to_pylist() == pytest.approx(VAL)
    assert analyze(run).curve.label == "overfitting"


def test_silent_twin_a_word_of_no_role_stays_a_part_of_the_loss():
    assert tokens("loss resultado") == ("loss", "resultado") and tokens("perdidas_totales") == ("perdidas", "totales")
    # ``de`` is also a language (a translation pair's ``en-de``), so it stays a word of its own.
    assert tokens("valid_en-de_loss") == ("valid", "en", "de", "loss")


def _deepxde(rows, metric="[]"):
    out = ["Training model...", "", "Step      Train loss                        Test loss                         Test metric"]
    for step, terms in rows:
        cell = "[" + ", ".join(f"{t:.2e}" for t in terms) + "]"
        out.append(f"{step:<10}{cell:<34}{cell:<34}{metric}")
    return out + ["", "Best model at step 3000:", "  train loss: 1.09e-03"]


TERMS = [(0, (1.11, 0.556, 5.81e-4)), (1000, (4.42e-3, 1.44e-4, 1.58e-6)), (2000, (1.42e-3, 1.1e-4, 1.2e-6)),
         (3000, (9.42e-4, 1.4e-4, 1.5e-6))]


def test_a_bracketed_list_in_a_table_cell_is_the_sum_of_its_terms(tmp_path):
    run = load_run(write_lines(tmp_path, _deepxde(TERMS)))
    assert run.scalars.column("loss").to_pylist() == pytest.approx(
        [float(f"{a:.2e}") + float(f"{b:.2e}") + float(f"{c:.2e}") for _, (a, b, c) in TERMS])
    assert any("the sum of its terms" in w for w in run.warnings)


def test_a_nan_term_makes_the_cell_nan(tmp_path):
    rows = [(s, t) for s, t in TERMS[:2]] + [(2000, (float("nan"),) * 3), (3000, (float("nan"),) * 3)]
    d = analyze(load_run(write_lines(tmp_path, _deepxde(rows))))
    assert d.curve.label == "diverged"


def test_silent_twin_a_bracketed_word_or_a_list_with_a_word_is_no_list():
    assert embedded._text("0      [done]    1.000") == "0      [done]    1.000"
    assert embedded._text("0   [0.5, x1]   1.0") == "0   [0.5, x1]   1.0"
    assert embedded._text("0   [0.5, 0.25]   1.0") == "0   0.75   1.0"


def test_a_lone_l_is_the_loss(tmp_path):
    lines = [f"epoch = {4 * (i + 1)}, w = {2 - 0.9 * 0.6 ** i:.8f}, l = {9.12 * 0.2 ** i:.8f}" for i in range(10)]
    run = load_run(write_lines(tmp_path, lines))
    assert run.scalars.column("loss").to_pylist() == pytest.approx([9.12 * 0.2 ** i for i in range(10)], rel=1e-3)


def test_silent_twin_a_letter_beside_other_words_is_no_loss():
    assert tokens("sigma_l") == ("sigma", "l") and tokens("l1") == ("l1",) and tokens("L") == ("l",)


def test_a_sweeps_settings_before_the_counter_leave_the_value_alone(tmp_path):
    values = [20.36, 7349.87, 1269438.9, 141211520.0, 11438132224.0, 7.2e11, 3.7e13, 1.6e15, 5.9e16, 1.9e18]
    run = load_run(write_lines(tmp_path, [f"LR: 1000, Iter 10: {v!r}" for v in values]))
    assert run.scalars.column("loss").to_pylist() == pytest.approx(values)
    assert analyze(run).curve.label == "diverged"


def test_silent_twin_a_measured_quantity_before_the_counter_is_no_setting():
    assert bare_value("LR: 0.1, Iter 3: 0.52") == pytest.approx(0.52)
    assert bare_value("acc: 0.91, Iter 3: 0.52") is None


def _glue(mcc):
    rng = np.random.default_rng(0)
    return [f"2020-01-19 14:{32 + i}:47 Ep  6/10 Gstep  {6900 + 50 * i} Step   {485 + 50 * i}:  "
            f"Loss=  {0.61 + 0.015 * rng.standard_normal():.6f}  LR={1.13e-05 - 1.5e-08 * i:.6e}   mcc=  {m:.6f},"
            for i, m in enumerate(mcc)]


def test_a_matthews_correlation_of_exactly_zero_at_every_print_is_one_class(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _glue([0.0] * 12))))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_no_agreement"
    assert "exactly 0" in d.headline


@pytest.mark.parametrize("mcc", [[0.0, 0.0] + [0.0] * 0, [0.0, 0.12, 0.18, 0.25, 0.3, 0.31, 0.33, 0.35, 0.36, 0.38,
                                                          0.39, 0.4], [0.0, 0.0, 0.0, 0.1] + [0.2] * 8])
def test_silent_twin_a_correlation_that_moves_off_zero_or_is_printed_twice(tmp_path, mcc):
    d = analyze(load_run(write_lines(tmp_path, _glue(mcc))))
    assert d.curve.evidence.get("kind") != "short_no_agreement"
