"""Round 29's readers, from the fifteenth thread set's refusals and misses (a development set since its one
grading in round 28): each shape on a synthetic log of its own, with a silent twin.

- a tqdm counter printed without its bar (``ncols=0``, a notebook's plain-text copy):
  ``0% 49/90000 [02:46<81:43:57, 3.27s/it]loss: 2.06``;
- ``After N epochs, the Average training loss is tensor(...)``: the epochs done are the step, and a
  name opened by an article or a conjunction ("the", "and") and joined to its value by ``:``, ``=`` or
  ``is`` is the name without it;
- ``validations`` is a validation word;
- a loss printed NaN on a line with no step of its own (``mean_loss: nan`` under a timestamp): the run's
  loss went non-finite even where the lines with a step stayed finite.
"""

from __future__ import annotations

import numpy as np

from runlens import analyze
from runlens.io.importers import detect_kind, read
from runlens.io.importers._textline import read_fields
from runlens.io.importers._textsteps import TQDM


def _imported(path):
    return read(detect_kind(path), path)


def _write(tmp_path, lines, name="train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_counter_without_its_bar_is_tqdm_s(tmp_path):
    lines = [f"0% {i}/90000 [{i // 20:02d}:{i % 60:02d}<81:43:57,  3.27s/it]loss: {2.5 - i / 1000:.3f} | lr: 0.001"
             for i in range(0, 500, 50)]
    imp = _imported(_write(tmp_path, lines))
    assert list(imp.train["loss"].steps) == list(range(0, 500, 50))


def test_a_fraction_in_prose_is_no_counter():
    assert TQDM.search("we got 50% 3/4 [see the table]") is None
    assert TQDM.search("  3%|▎   | 49/1000 [00:02<00:40, 23.1it/s, loss=0.5]") is not None


def _voxelmorph(tmp_path, train, val):
    lines = []
    for e, (t, v) in enumerate(zip(train, val, strict=True), start=1):
        lines += [f"[ 0.43 mins] After {e} epochs, the Average training loss is  tensor({t:.4f}, device='cuda:0') "
                  f"and average DICE score is tensor(0.2874, device='cuda:0')",
                  f"[ 0.24 mins] After {e} epochs, the Average validations loss is  tensor({v:.4f}, device='cuda:0') "
                  f"and average DICE score is tensor(0.3, device='cuda:0')"]
    return _write(tmp_path, lines)


def test_the_epochs_done_are_the_step_and_the_article_is_no_part_of_the_name(tmp_path):
    imp = _imported(_voxelmorph(tmp_path, [0.9, 0.7, 0.6, 0.55], [0.95, 0.8, 0.7, 0.66]))
    assert list(imp.train["loss"].steps) == [1, 2, 3, 4]
    np.testing.assert_allclose(imp.train["loss"].values, [0.9, 0.7, 0.6, 0.55])
    np.testing.assert_allclose(imp.evals["val_loss"].values, [0.95, 0.8, 0.7, 0.66])


def test_an_article_alone_is_no_name_and_prose_stays_prose():
    assert read_fields("the Average training loss is 0.5 and average DICE score is 0.3") == [
        ("Average training loss", 0.5), ("average DICE score", 0.3)]
    assert read_fields("the model that we trained reached 0.95") == []
    assert read_fields("the loss reached 0.5") == []  # no ':', '=' or 'is': a sentence, not a field


def test_a_stepless_nan_loss_line_is_the_run_s_loss_gone_non_finite(tmp_path):
    lines = ["[02.06.24|21:04:38] Training epoch: 0", "[02.06.24|21:13:26] \tIter 0 Done. | loss: 1.4058 | lr: 0.010000",
             "[02.06.24|21:13:31] \tmean_loss: nan", "[02.06.24|21:13:31] Done."]
    diag = analyze(_write(tmp_path, lines))
    assert "nonfinite_loss" in {f.code for f in diag.findings}


def test_a_finite_stepless_mean_loss_is_no_event(tmp_path):
    lines = ["[02.06.24|21:04:38] Training epoch: 0", "[02.06.24|21:13:26] \tIter 0 Done. | loss: 1.4058 | lr: 0.010000",
             "[02.06.24|21:13:31] \tmean_loss: 1.2", "[02.06.24|21:13:31] Done."]
    assert "nonfinite_loss" not in {f.code for f in analyze(_write(tmp_path, lines)).findings}
