"""Whitespace and tab tables pasted with the lines around them: the call or banner above a table,
a header printed again before every row block, a validation block under its own header, a tqdm bar
glued to a row, a header of two-word names or with an unnamed index column. Each firing case has a
silent twin that kept its reading before."""

from __future__ import annotations

import numpy as np
import pytest
from shapes import read_paste

from runlens.errors import ImportFailedError
from runlens.io.importers import detect_kind, read

FASTAI = """epoch     train_loss  valid_loss  accuracy  time
0         0.884512    0.507731    0.837500  00:14
1         0.512307    0.382915    0.878100  00:14
2         0.371044    0.318204    0.900800  00:14
3         0.301289    0.290447    0.910200  00:14
4         0.276031    0.283902    0.912500  00:14
"""
TRAIN = [0.884512, 0.512307, 0.371044, 0.301289, 0.276031]
VALID = [0.507731, 0.382915, 0.318204, 0.290447, 0.283902]




def _loss(imp, role="loss"):
    s = imp.train[role] if role in imp.train else imp.evals[role]
    return s.steps.tolist(), np.round(s.values, 6).tolist()


@pytest.mark.parametrize("above", ["learn.fit_one_cycle(5, 3e-3)\n",
                                   "Re-initializing module.\nStarting training for 5 epochs...\n"])
def test_a_line_of_code_or_prose_above_a_table_is_not_its_header(tmp_path, above):
    imp = read_paste(tmp_path, above + FASTAI)
    assert _loss(imp) == ([0, 1, 2, 3, 4], TRAIN)
    assert _loss(imp, "val_loss") == ([0, 1, 2, 3, 4], VALID)


def test_silent_twin_the_bare_table_and_a_message_between_its_rows_keep_their_reading(tmp_path):
    assert _loss(read_paste(tmp_path, FASTAI)) == ([0, 1, 2, 3, 4], TRAIN)
    lines = FASTAI.splitlines(keepends=True)
    lines.insert(3, "Better model found at epoch 1 with valid_loss value: 0.382915.\n")  # SaveModelCallback
    imp = read_paste(tmp_path, "".join(lines), "with_message.txt")
    assert _loss(imp) == ([0, 1, 2, 3, 4], TRAIN)


COLAB = "Step\tTraining Loss\tValidation Loss\n" + "".join(
    f"{10 * i}\t{2.0 - 0.1 * i:.6f}\t{2.1 - 0.08 * i:.6f}\n" for i in range(1, 9))


@pytest.mark.parametrize("above", [" [80/80 07:12, Epoch 0/1]\n",
                                   "==((====))==  Unsloth 2025.3.19: Fast Llama patching.\n"
                                   "   \\\\   /|    GPU: Tesla T4. Max memory: 14.741 GB.\n"])
def test_a_progress_line_or_banner_above_a_tab_table_is_not_its_header(tmp_path, above):
    imp = read_paste(tmp_path, above + COLAB)
    steps, values = _loss(imp)
    assert steps == list(range(10, 90, 10)) and values[0] == 1.9
    assert _loss(imp, "val_loss")[1][-1] == pytest.approx(1.46)


def test_silent_twin_a_json_array_still_opens_as_json(tmp_path):
    assert _loss(read_paste(tmp_path, COLAB))[0] == list(range(10, 90, 10))
    path = tmp_path / "history.json"
    path.write_text('[{"step": 1, "loss": 0.9}, {"step": 2, "loss": 0.8}, {"step": 3, "loss": 0.7}]')
    assert _loss(read(detect_kind(path), path)) == ([1, 2, 3], [0.9, 0.8, 0.7])


YOLO_HEAD = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
YOLO_VAL = ("                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): "
            "100%|██████████| 56/56 [00:16<00:00,  3.41it/s]\n"
            "                   all       1766       9034      0.693      0.609       0.31       0.18\n")


def _yolo_row(e, box, cls, dfl):
    return (f"       {e}/5      2.47G      {box:.3f}      {cls:.3f}      {dfl:.3f}         86        640: "
            "100%|██████████| 330/330 [02:13<00:00,  2.49it/s]\n")


YOLO_ROWS = [(1, 1.5, 3.0, 1.4), (2, 1.4, 2.5, 1.3), (3, 1.3, 2.1, 1.25), (4, 1.2, 1.8, 1.2), (5, 1.1, 1.5, 1.15)]
YOLO_SUMS = [5.9, 5.2, 4.65, 4.2, 3.75]


@pytest.mark.parametrize("every_epoch", [True, False])
def test_a_header_before_every_epoch_and_a_validation_block_between_epochs_are_one_table(tmp_path, every_epoch):
    text = "Starting training for 5 epochs...\n\n"
    for i, row in enumerate(YOLO_ROWS):
        text += (YOLO_HEAD if every_epoch or i == 0 else "") + _yolo_row(*row) + YOLO_VAL
    imp = read_paste(tmp_path, text)
    assert _loss(imp) == ([1, 2, 3, 4, 5], YOLO_SUMS)
    assert any("another header" in w for w in imp.warnings)


def test_silent_twin_one_header_over_contiguous_rows_reads_as_before(tmp_path):
    imp = read_paste(tmp_path, YOLO_HEAD + "".join(_yolo_row(*r) for r in YOLO_ROWS))
    assert _loss(imp) == ([1, 2, 3, 4, 5], YOLO_SUMS)
    assert not any("another header" in w for w in imp.warnings)


SPACY = """ℹ Saving to output directory: output
ℹ Using CPU

E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  ENTS_P  ENTS_R  SCORE
---  ------  ------------  --------  ------  ------  ------  ------
  0     200         35.70   2163.45   83.16   83.79   82.53    0.83
  0     400         11.09   1182.04   88.91   89.03   88.78    0.89
  0     600         13.27   1150.09   89.98   90.20   89.77    0.90
  0     800         19.24   1087.27   92.02   91.73   92.32    0.92
"""


def test_two_word_column_names_are_cut_by_the_rule_under_them(tmp_path):
    imp = read_paste(tmp_path, SPACY)
    roles = imp.config["import_roles"]["loss"]
    assert roles["columns"] == ["LOSS TOK2VEC", "LOSS NER"]
    # spaCy sums each loss over the 200 steps since the row before (test_spacy_interval_sums.py).
    steps, values = _loss(imp)
    assert steps == [200, 400, 600, 800]
    assert values == pytest.approx([2199.15 / 200, 1193.13 / 200, 1163.36 / 200, 1106.51 / 200])


def test_silent_twin_one_word_names_over_a_rule_keep_their_columns(tmp_path):
    skorch = ("  epoch    train_loss    valid_acc    valid_loss     dur\n"
              "-------  ------------  -----------  ------------  ------\n"
              + "".join(f"      {e}        {1 / e:.4f}       0.5203        {1.1 / e:.4f}  0.0412\n"
                        for e in range(1, 6)))
    imp = read_paste(tmp_path, skorch)
    assert _loss(imp) == ([1, 2, 3, 4, 5], [1.0, 0.5, 0.3333, 0.25, 0.2])


PANDAS = """In [14]: hist = pd.DataFrame(history.history)
In [15]: print(hist.to_string())
       loss  val_loss
0  0.912000  0.801000
1  0.701000  0.650000
2  0.503000  0.552000
3  0.401000  0.500000
4  0.350000  0.480000
"""


def test_an_unnamed_index_column_does_not_shift_the_names(tmp_path):
    imp = read_paste(tmp_path, PANDAS)
    assert _loss(imp)[1] == [0.912, 0.701, 0.503, 0.401, 0.35]
    assert _loss(imp, "val_loss")[1] == [0.801, 0.65, 0.552, 0.5, 0.48]


def test_silent_twin_a_named_first_column_stays_named(tmp_path):
    text = PANDAS.split("\n", 2)[2].replace("       loss  val_loss", "epoch      loss  val_loss")
    imp = read_paste(tmp_path, text)
    assert _loss(imp) == ([0, 1, 2, 3, 4], [0.912, 0.701, 0.503, 0.401, 0.35])


def test_prose_alone_is_still_refused(tmp_path):
    path = tmp_path / "prose.txt"
    path.write_text("learn.fit_one_cycle(5, 3e-3)\nit went well, accuracy was high\n")
    assert detect_kind(path) is None
    with pytest.raises(ImportFailedError):
        read("table", path)
