"""A header line and the row of values under it, printed again every epoch with other output between
(YOLOv5/v7/Ultralytics consoles: validation headers and rows, tqdm redraws, blank lines), read as one
table by :mod:`runlens.io.reader.headed`; a ``total`` column proven the sum of other columns is the
training loss (:mod:`runlens.io.reader.roles`). Each firing case has a silent twin that keeps its reading."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from shapes import read_paste

from runlens.cli import main
from runlens.errors import ImportFailedError
from runlens.io.importers import detect_kind, read
from runlens.io.loose import sniff_loose
from runlens.io.reader import read_table

YOLOV5 = """Epoch   gpu_mem       box       obj       cls     total   targets  img_size
     5/249    0.868G   0.06393   0.01588  0.009617   0.08943        36       640: 100%|█| 211/211 [00:48<00:
               Class      Images     Targetsbox is            P           R      mAP@.5  mAP@.5:.95: 100%|█| 71/71
                 all         281    1.55e+03        0.23       0.328       0.203      0.0525
"""
# The validation "all" row of the epoch before is redrawn under the training header, above the training row.
YOLOV7 = """     Epoch   gpu_mem       box       obj       cls     total    labels  img_size
                 all         787        2054       0.736      0.0185     0.00493     0.00334
   32/4999     55.1G   0.05461   0.01017   0.03715    0.1019        26      1856: 100%|██████████| 295/295 [12:51<00:00,  2.62s/it]
               Class      Images      Labels           P           R      mAP@.5  mAP@.5:.95: 100%|██████████| 50/50 [01:10<00:00,  1.42s/it]

     Epoch   gpu_mem       box       obj       cls     total    labels  img_size
                 all         787        2054       0.874     0.00923     0.00909     0.00684
   33/4999     70.1G   0.05069   0.01035   0.03706    0.0981        14      1856: 100%|██████████| 295/295 [12:39<00:00,  2.57s/it]
"""
# Ultralytics 8.3's bar has no pipes: the row ends at the word with the colon.
ULTRALYTICS = """      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
     12/300      3.87G       3.63      5.712      4.189        176        640: 100% ━━━━━━━━━━━━ 8/8 3.1it/s 2.6s
                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100% ━━━━━━━━━━━━ 4/4 4.3it/s 0.9s
                   all        128        929     0.0012     0.0833    0.00211   0.000842

      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
     13/300      3.87G       3.62      5.677       4.18        251        640: 100% ━━━━━━━━━━━━ 8/8 4.5it/s 1.8s
                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100% ━━━━━━━━━━━━ 4/4 6.4it/s 0.6s
                   all        128        929     0.0019     0.0912    0.00305    0.00121
"""




def _loss(imp):
    s = imp.train["loss"]
    return s.steps.tolist(), np.round(s.values, 6).tolist()


@pytest.mark.parametrize(("text", "steps", "loss", "why"), [
    (YOLOV5, [5], [0.08943], "'total' is the sum of box+obj+cls at every row"),
    (YOLOV7, [32, 33], [0.1019, 0.0981], "'total' is the sum of box+obj+cls at every row"),
    (ULTRALYTICS, [12, 13], [13.531, 13.477], "loss parts logged without a total"),
])
def test_header_and_row_pairs_among_validation_lines_are_a_table_counted_by_epoch(tmp_path, text, steps, loss, why):
    imp = read_paste(tmp_path, text)
    assert _loss(imp) == (steps, loss)
    assert imp.config["index_kind"] == "epoch"
    assert why in imp.config["import_roles"]["loss"]["why"]
    # The validation rows (a class label first) are not read: no column of theirs becomes a series.
    assert not any("mAP" in k or "Images" in k for k in [*imp.train, *imp.evals])


def test_tqdm_redraws_of_an_epoch_row_keep_the_last_drawing(tmp_path):
    head = "Epoch   gpu_mem       box       obj       cls     total   targets  img_size\n"
    text = ""
    for e, (box, obj, cls) in enumerate([(0.09, 0.03, 0.02), (0.08, 0.025, 0.015), (0.07, 0.02, 0.01)]):
        half = f"  {e}/2   1.2G   {box + 0.01:.4f}   {obj:.4f}   {cls:.4f}   {box + 0.01 + obj + cls:.4f}   30   640:  50%|#  | 5/10\r"
        full = f"  {e}/2   1.2G   {box:.4f}   {obj:.4f}   {cls:.4f}   {box + obj + cls:.4f}   30   640: 100%|###| 10/10\n"
        text += head + half + full + "   Class  Images  Labels  P  R  mAP@.5  mAP@.5:.95: 100%|###| 2/2\n" \
            + f"     all    50    60    0.5    0.4    0.3    0.{e + 1}\n"
    assert _loss(read_paste(tmp_path, text)) == ([0, 1, 2], [0.14, 0.12, 0.1])


def test_a_total_gone_nan_with_its_parts_is_the_loss_proven_on_the_rows_before(tmp_path):
    head = "     Epoch   gpu_mem       box       obj       cls     total    labels  img_size\n"
    rows = [("0.05461", "0.01017", "0.03715", "0.1019"), ("0.05069", "0.01035", "0.03706", "0.0981"),
            ("nan", "nan", "nan", "nan")]
    text = "".join(head + f"   {e}/99     55.1G   {b}   {o}   {c}   {t}        26      1856: 100%|###| 295/295\n"
                   "               Class      Images      Labels           P           R      mAP@.5  mAP@.5:.95: 100%|#| 50/50\n"
                   "                 all         787        2054       0.736      0.0185     0.00493     0.00334\n"
                   for e, (b, o, c, t) in enumerate(rows))
    imp = read_paste(tmp_path, text)
    steps, values = _loss(imp)
    assert steps == [0, 1, 2] and values[:2] == [0.1019, 0.0981] and np.isnan(values[2])


def test_a_total_that_sums_other_columns_is_the_loss_in_a_csv_too(tmp_path):
    text = "epoch,box,obj,cls,total\n" + "".join(
        f"{e},{b},{o},{c},{round(b + o + c, 5)}\n" for e, b, o, c in [(1, 0.5, 0.2, 0.1), (2, 0.4, 0.15, 0.08),
                                                                       (3, 0.35, 0.12, 0.07)])
    imp = read_paste(tmp_path, text, "results.csv")
    assert _loss(imp) == ([1, 2, 3], [0.8, 0.63, 0.54])
    assert imp.config["import_roles"]["loss"]["why"] == "'total' is the sum of box+obj+cls at every row"


@pytest.mark.parametrize("text", [
    # A total that is not the sum of the other columns.
    "epoch,box,obj,cls,total\n1,0.5,0.2,0.1,0.9\n2,0.4,0.15,0.08,0.7\n3,0.35,0.12,0.07,0.6\n",
    # A total that is the sum of timings: times are never a loss's parts.
    "epoch,data_time,fwd_time,total\n1,0.5,0.2,0.7\n2,0.4,0.15,0.55\n3,0.35,0.12,0.47\n",
])
def test_silent_twin_a_total_not_proven_a_sum_of_loss_parts_is_not_the_loss(tmp_path, text):
    path = tmp_path / "results.csv"
    path.write_text(text)
    with pytest.raises(ImportFailedError, match="no training loss"):
        read("table", path)


def test_silent_twin_one_header_over_contiguous_rows_is_still_a_delimited_table(tmp_path):
    text = "Epoch   box   obj   cls   total\n" + "".join(
        f"{e}/9   {0.5 - e / 100:.3f}   0.200   0.100   {0.8 - e / 100:.3f}\n" for e in range(10))
    path = tmp_path / "paste.txt"
    path.write_text(text)
    assert read_table(path).shape == "delimited"
    assert _loss(read_paste(tmp_path, text))[0] == list(range(10))


def test_silent_twin_a_summary_table_at_the_end_of_a_text_log_leaves_it_to_the_text_reader(tmp_path):
    lines = "".join(f"step {s}: loss {1.0 / (1 + s / 100):.4f}, lr 0.001\n" for s in range(10, 210, 10))
    text = lines + "Epoch   box   obj   cls   total\n1/1   0.5   0.2   0.1   0.8\n"
    path = tmp_path / "train.log"
    path.write_text(text)
    assert detect_kind(path) == "text"
    assert read("text", path).train["loss"].steps.tolist() == list(range(10, 210, 10))


def test_silent_twin_key_value_lines_are_still_blocks(tmp_path):
    text = "".join(f"epoch: {e}\nloss: {1 - e / 10:.2f}\nval_loss: {1.1 - e / 10:.2f}\n\n" for e in range(1, 6))
    path = tmp_path / "train.log"
    path.write_text(text)
    assert read_table(path).shape == "key/value blocks"


def test_header_rows_without_a_training_signal_are_refused_in_one_line(tmp_path):
    text = "".join(f"  Epoch   gpu_mem   targets   img_size\n  {e}/3   1.2G   {30 + e}   640: 100%|###| 9/9\n"
                   "   Class  Images  Labels  P  R  mAP@.5  mAP@.5:.95: 100%|###| 2/2\n"
                   "     all    50    60    0.5    0.4    0.3    0.2\n" for e in range(3))
    path = tmp_path / "paste.txt"
    path.write_text(text)
    res = CliRunner().invoke(main, ["analyze", str(path)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.output.count("\n") == 1 and "no training loss" in res.output


def test_a_yolo_console_log_met_in_a_folder_walk_is_a_log(tmp_path):
    (tmp_path / "train.log").write_text(YOLOV7)
    assert sniff_loose(str(tmp_path / "train.log")) is None


def test_silent_twin_header_rows_with_no_training_signal_met_in_a_folder_walk_are_named_notread_paste(tmp_path):
    text = "".join(f"  Epoch   gpu_mem   targets   img_size\n  {e}/3   1.2G   {30 + e}   640: 100%|###| 9/9\n"
                   for e in range(3))
    (tmp_path / "train.log").write_text(text)
    assert sniff_loose(str(tmp_path / "train.log"))
