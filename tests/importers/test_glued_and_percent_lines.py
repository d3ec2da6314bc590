"""Round 17, from the second thread set's refusals (a development set since its one grading):

- a value glued to its name by an underscore (WaveGlow's ``step_78540:  loss_-4.065555573``): the
  name ends before a decimal number, and ``step_N`` is the step;
- a counter with its percent of the total and one unnamed number (the PyTorch tutorials'
  ``5000 5% (0m 12s) 2.4177 Coelho / Portuguese ✓`` and ``0m 5s (5000 5%) 2.8345``).

From the third thread set's refusals: BasicSR's ``iter:  70,400`` (a count with thousands separators) and
``l_pix`` (its losses are named ``l_<what>``); DL4J's ``Score at iteration 60 is NaN`` (the listener's
score is the loss).

Silent twins: names holding digits keep them (``top_1``, ``loss_cls``), an integer glued by an
underscore stays a name's, a percent above 100 is not a counter's share, ``lr`` and ``l2_norm`` are no
losses, a named score elsewhere stays a score.
"""

from __future__ import annotations

import math

from runlens.io.importers import text
from runlens.io.importers._textline import read_fields
from runlens.io.loader import load_runs
from runlens.signals import Signals


def _write(tmp_path, lines):
    path = tmp_path / "train.log"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_value_glued_to_its_name_by_an_underscore_is_read(tmp_path):
    vals = [-4.065555573, -4.490265846, -4.454271317, -4.322495461, 4191.68359375, -2.408614397]
    imp = text.read(_write(tmp_path, [f"step_{78540 + 20 * i}:\tloss_{v:.9f}" for i, v in enumerate(vals)]))
    loss = imp.train["loss"]
    assert list(loss.steps) == [78540 + 20 * i for i in range(6)]
    assert [round(v, 6) for v in loss.values] == [round(v, 6) for v in vals]


def test_silent_twin_names_with_digits_and_integer_suffixes_keep_them():
    assert read_fields("loss_cls 0.25 top_1 acc 3 lr_0.001") == [("loss_cls", 0.25), ("top_1 acc", 3.0), ("lr", 0.001)]
    assert read_fields("layer_3 grad 0.5") == [("layer_3 grad", 0.5)]


def test_a_counter_with_its_percent_and_one_number_is_a_step_and_its_loss(tmp_path):
    lines = ["5000 5% (0m 12s) 2.4177 Coelho / Portuguese ✓", "10000 10% (0m 21s) 2.5862 Desrochers / Dutch ✗ (French)",
             "15000 15% (0m 30s) 1.1451 Minitsky / Polish ✗ (Russian)", "20000 20% (0m 38s) nan Koza / Japanese ✗ (Czech)"]
    loss = text.read(_write(tmp_path, lines)).train["loss"]
    assert list(loss.steps) == [5000, 10000, 15000, 20000]
    assert loss.values[:3].tolist() == [2.4177, 2.5862, 1.1451] and math.isnan(loss.values[3])


def test_the_elapsed_time_may_come_first(tmp_path):
    lines = ["0m 5s (5000 5%) 2.8345", "0m 10s (10000 10%) 2.3456", "0m 15s (15000 15%) 2.1234"]
    loss = text.read(_write(tmp_path, lines)).train["loss"]
    assert list(loss.steps) == [5000, 10000, 15000] and loss.values.tolist() == [2.8345, 2.3456, 2.1234]


def test_silent_twin_a_percent_above_a_hundred_is_no_counter_share():
    from runlens.io.importers._shapedlines import shaped_line

    assert shaped_line("5000 150% (0m 12s) 2.4177") is None
    assert shaped_line("5000 50% (0m 12s) 2.4177")[0] == 5000


BASICSR = ("2022-06-03 03:0{i}:12,848 INFO: [NAFNe..][epoch:{e}, iter:  {it}, lr:(7.242e-04,)] "
           "[eta: 15:02:14, time (data): 0.399 (0.008)] l_pix: {v}")


def test_basicsr_lines_count_thousands_and_name_their_loss_l_pix(tmp_path):
    vals = [-28.745, -29.588, -28.007, -27.306]
    lines = [BASICSR.format(i=i, e=200 + i, it=f"{70 + i // 2},{400 + 200 * (i % 2)}", v=v) for i, v in enumerate(vals)]
    loss = Signals(load_runs(_write(tmp_path, lines)).run()).loss
    assert list(loss.steps) == [70400, 70600, 71400, 71600]
    assert loss.values.tolist() == vals


def test_silent_twin_a_name_starting_with_an_l_word_is_not_a_loss():
    from runlens.io.reader.names import is_lossish, tokens

    assert is_lossish(tokens("l_pix")) and is_lossish(tokens("l_g_percep"))
    assert not is_lossish(tokens("lr")) and not is_lossish(tokens("l2_norm")) and not is_lossish(tokens("layer_1"))


def test_dl4j_score_at_iteration_is_its_loss(tmp_path):
    lines = [f"09:54:3{i}.023 [main] INFO  o.d.o.l.ScoreIterationListener - Score at iteration {20 * i} is {v}"
             for i, v in enumerate(["2.31", "1.95", "1.60", "NaN"])]
    loss = text.read(_write(tmp_path, lines)).train["loss"]
    assert list(loss.steps) == [0, 20, 40, 60] and math.isnan(loss.values[-1])


def test_silent_twin_a_named_score_elsewhere_is_no_loss():
    assert read_fields("epoch 3 score 0.91") == [("epoch", 3.0), ("score", 0.91)]


def test_vse_logger_le_is_its_loss(tmp_path):
    lines = [f"2020-09-15 21:0{i}:17,981 Epoch: [5][{1069 + 100 * i}/2266]\tEit {12400 + 100 * i}  lr 0.0002  "
             f"Le {25.6 - 0.5 * i:.4f} ({25.6 - 0.2 * i:.4f})\tTime 0.900 (0.000)" for i in range(5)]
    loss = Signals(load_runs(_write(tmp_path, lines)).run()).loss
    assert loss.values.tolist() == [25.6 - 0.5 * i for i in range(5)]


def test_silent_twin_a_name_holding_le_inside_a_word_is_no_loss():
    from runlens.io.reader.names import is_lossish, tokens

    assert is_lossish(tokens("Le"))
    assert not is_lossish(tokens("scale")) and not is_lossish(tokens("LeNet_acc")) and not is_lossish(tokens("table"))
