"""Round 27's readers, from the development thread sets' refusals: each shape on a synthetic log of
its own, with a silent twin.

- a loss and what it is of written as one word (``genloss``, ``klloss``, ``trainloss``; one letter before
  it is as often a word, ``gloss``);
- a header commented out with ``#`` right above the first row of a space-aligned table (numpy.savetxt,
  DeePMD's ``lcurve.out``), where a ``#`` line of prose stays a comment.
"""

from __future__ import annotations

import pytest

from runlens import analyze
from runlens.io.loader import load_run
from runlens.io.reader.names import tokens


@pytest.mark.parametrize("name, words", [
    ("genloss", ("gen", "loss")), ("klloss", ("kl", "loss")), ("trainLoss", ("train", "loss")),
    ("gloss", ("gloss",)), ("dloss", ("dloss",)),
    ("totalloss", ("total", "loss")), ("val_loss", ("val", "loss")), ("loss", ("loss",)),
    ("lossless", ("lossless",)), ("loss_scale", ("loss", "scale")),
])
def test_a_loss_written_as_one_word_with_what_it_is_of(name, words):
    assert tokens(name) == words


def test_a_vae_print_of_two_one_word_losses_is_read(tmp_path):
    path = tmp_path / "vae.log"
    rows = [(e, 80000 - 300 * e, 120 + e) for e in range(400, 408)] + [(e, "nan", "nan") for e in range(408, 412)]
    path.write_text("".join(f"epoch {e}: genloss {g} latloss {lat}\n" for e, g, lat in rows))
    diag = analyze(path)
    assert diag.curve.label == "diverged" and "nonfinite_loss" in {f.code for f in diag.findings}


def test_silent_twin_the_same_print_finite_to_the_end(tmp_path):
    path = tmp_path / "vae.log"
    path.write_text("".join(f"epoch {e}: genloss {80000 - 300 * e} latloss {120 + e}\n" for e in range(400, 412)))
    diag = analyze(path)
    assert diag.curve.label != "diverged" and not {f.code for f in diag.findings} & {"nonfinite_loss", "diverged"}


LCURVE = """#  step      rmse_trn    rmse_e_trn    rmse_f_trn         lr
      0      2.77e+01      6.40e-01      8.74e-01    1.0e-03
    100      1.39e+01      2.22e-01      4.39e-01    1.0e-03
    200      8.11e+00      1.61e-01      2.56e-01    1.0e-03
    300      6.70e+00      2.64e-02      2.12e-01    1.0e-03
    400      6.27e+00      6.61e-03      2.01e-01    1.0e-03
    500      5.81e+00      1.18e-02      1.84e-01    1.0e-03
"""


def test_a_header_commented_out_above_the_first_row_names_the_columns(tmp_path):
    path = tmp_path / "lcurve.out"
    path.write_text(LCURVE)
    diag = analyze(path)
    assert diag.key_numbers["steps"] == 6 and diag.key_numbers["last_step"] == 500
    assert diag.key_numbers["first_loss"] == pytest.approx(27.7)


def test_silent_twin_a_comment_as_wide_that_holds_numbers_names_nothing(tmp_path):
    path = tmp_path / "lcurve.out"
    path.write_text("# run 2 of 5 seeds\n" + "".join(ln + "\n" for ln in LCURVE.splitlines()[1:]))
    run = load_run(path)
    # No column is named from the comment: the table is read as unnamed, its first value after the counter
    # the loss by the unnamed table's rule (round 39: up to five values), the others left as numbered.
    assert "run" not in run.scalars.column_names and "column_3" in run.scalars.column_names
    assert run.scalars.column("loss").to_pylist()[0] == pytest.approx(27.7)


def test_a_projection_asks_for_a_part_of_a_name_in_any_case():
    from runlens.io.run import wanted_columns

    names = ["step", "loss", "categorical_accuracy", "Train_Acc", "val_loss@wiki", "lr"]
    assert wanted_columns(["*acc*"], names) == ["categorical_accuracy", "Train_Acc"]
    assert wanted_columns(["val_loss@*"], names) == ["val_loss@wiki"]
    assert wanted_columns(["*"], names) == names  # a lone star: every column
    assert wanted_columns(["LOSS"], names, keys=("step",)) == ["step", "loss"]


@pytest.mark.parametrize("name, words", [("lossvalue", ("loss", "value")), ("lossavg", ("loss", "avg")),
                                         ("lossless", ("lossless",)), ("losses", ("losses",))])
def test_a_loss_run_on_into_a_neutral_word(name, words):
    # Round 28: InsightFace's ``lossvalue=6.24`` is the loss; ``lossless`` stays a word.
    assert tokens(name) == words
