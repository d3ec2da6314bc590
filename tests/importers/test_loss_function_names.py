"""A column named after the loss function (``CrossEntropy``, ``cross_entropy``) is the loss, however the
name is split into words; a name that only contains one of the words is not."""

from __future__ import annotations

import pytest

from runlens.io.reader.names import is_lossish, tokens


@pytest.mark.parametrize("name", ["CrossEntropy", "cross_entropy", "softmax_cross_entropy", "train/CrossEntropy",
                                  "crossentropy", "CrossE", "cross_ent", "xent_loss"])
def test_the_loss_functions_name_is_a_loss(name):
    assert is_lossish(tokens(name))
    assert "crossentropy" in tokens(name) or "xent" in tokens(name)


@pytest.mark.parametrize("name", ["entropy", "cross_val_acc", "policy_entropy", "cross", "cross_epoch", "crosses"])
def test_silent_twin_one_of_its_words_alone_is_not(name):
    assert not is_lossish(tokens(name))


def test_a_pasted_gluon_line_reads_its_cross_entropy(tmp_path):
    from runlens.io.importers import text

    path = tmp_path / "train.log"
    path.write_text("".join(f"[Epoch 1 Batch {i * 100}] Speed: 40.2 samples/sec\tCrossEntropy={3.1 - 0.1 * i:.3f}\n"
                            for i in range(1, 7)))
    imp = text.read(path)
    assert [round(v, 3) for v in imp.train["loss"].values] == [3.0, 2.9, 2.8, 2.7, 2.6, 2.5]
