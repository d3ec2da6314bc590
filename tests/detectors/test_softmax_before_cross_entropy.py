"""softmax_before_cross_entropy: the loss floor ln(1+(K-1)/e) with a high accuracy."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from gradients_synth import check
from loss_synth import healthy, make_run
from runs import write_part

from recorders.format import parse_part_name
from runlens.analysis import analyze
from runlens.detectors import Skip
from runlens.testing import build_run

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "bugs"


def _floor(k):
    return math.log1p((k - 1) / math.e)


def _softmax_loss(n, seed, k):
    """A loss falling from ln K onto the softmax floor, from above, as the double softmax saturates."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    return _floor(k) + (math.log(k) - _floor(k)) * np.exp(-8 * t) * np.exp(0.05 * rng.standard_normal(n)) + 1e-4


RECORDER_COLUMNS = ("ce_grad_scale", "backward_passes", "logits_in_unit_interval", "logits_sum_to_one")


def test_real_run_names_the_bug_first():
    # Recorded with a softmax inside the model: the recorder saw probabilities reach the loss.
    diag = analyze(FIX / "softmax_before_cross_entropy-mlp")
    f = diag.findings[0]
    assert f.code == "softmax_before_cross_entropy"
    assert f.severity == "error"
    assert f.evidence["reading"] == "recorder: outputs sum to 1" and f.evidence["simplex_share"] == 1.0
    assert f.evidence["classes"] == 10
    assert f.evidence["late_min"] >= f.evidence["softmax_floor"] * (1 - 0.002)


def test_real_fixed_twin_is_silent():
    diag = analyze(FIX / "softmax_before_cross_entropy-mlp-fixed")
    assert "softmax_before_cross_entropy" not in {f.code for f in diag.findings}


def _copy_editing_scalars(src, dest, edit):
    """The run folder ``src`` copied to ``dest``, each scalars part rewritten as ``edit`` makes it."""
    shutil.copytree(src, dest)
    for part in (dest / "scalars").glob("*.parquet"):
        rank, seq = parse_part_name(part.name)
        write_part(dest, "scalars", edit(pq.read_table(part)), rank=rank, seq=seq)
    return dest


def _without_recorder_readings(name, dest):
    """The fixture run as an older recorder or an importer leaves it: no readings of the logits."""
    return _copy_editing_scalars(FIX / name, dest, lambda table: table.drop_columns(
        [c for c in RECORDER_COLUMNS if c in table.column_names]))


def _loss_every_10(table, phase):
    """``table`` with its loss null but on the steps ``phase`` modulo 10: a loop that logs its loss every
    10 steps (``phase`` 9: ``if (i + 1) % 10 == 0``), the recorder's readings left on their own steps."""
    steps = table.column("step").to_numpy()
    loss = pa.array(table.column("loss").to_numpy(zero_copy_only=False), table.schema.field("loss").type,
                    mask=steps % 10 != phase)
    return table.set_column(table.column_names.index("loss"), "loss", loss)


@pytest.mark.parametrize("phase", [0, 9])
@pytest.mark.parametrize(("name", "fires"), [("softmax_before_cross_entropy-mlp", True),
                                             ("softmax_before_cross_entropy-mlp-fixed", False)])
def test_real_runs_logging_their_loss_every_10_steps(tmp_path, name, fires, phase):
    # Read every 2 steps, the loss kept every 10. The structure decides these without pairing a read
    # with its loss (outputs summing to 1; the fixed twin's unsqueezed gradient), so the sparser loss
    # must change neither; the squeezed reading, which pairs them, is tested below.
    run = _copy_editing_scalars(FIX / name, tmp_path / "run", lambda table: _loss_every_10(table, phase))
    found = [f for f in analyze(run).findings if f.code == "softmax_before_cross_entropy"]
    if fires:
        assert found and found[0].evidence["reading"] == "recorder: outputs sum to 1"
        assert found[0].evidence["late_min"] >= found[0].evidence["softmax_floor"] * (1 - 0.002)
    else:
        assert found == []


def test_real_run_without_the_recorder_readings_is_read_off_the_loss_level(tmp_path):
    f = analyze(_without_recorder_readings("softmax_before_cross_entropy-mlp", tmp_path / "run")).findings[0]
    assert f.code == "softmax_before_cross_entropy" and f.evidence["reading"] == "loss level"
    assert f.evidence["accuracy"] >= 0.9


def test_real_fixed_twin_without_the_recorder_readings_is_silent(tmp_path):
    diag = analyze(_without_recorder_readings("softmax_before_cross_entropy-mlp-fixed", tmp_path / "run"))
    assert "softmax_before_cross_entropy" not in {f.code for f in diag.findings}


@pytest.mark.parametrize("k", [2, 5, 10, 100])
@pytest.mark.parametrize("seed", range(3))
def test_synthetic_floor_with_accuracy_fires(k, seed):
    n = 400
    run = make_run(_softmax_loss(n, seed, k), meta={"config": {"num_classes": k}},
                   scalars={"accuracy": np.linspace(0.3, 0.99, n)})
    [f] = check("softmax_before_cross_entropy", run)
    assert f.evidence["softmax_floor"] == pytest.approx(_floor(k))
    assert f.evidence["floor_gap"] < 0.25
    assert f.evidence["calibrated_loss_at_accuracy"] < f.evidence["softmax_floor"]


@pytest.mark.parametrize("seed", range(3))
def test_silent_twin_a_binary_classifier_whose_accuracy_a_correct_model_reaches_at_the_floor(seed):
    # At 88% accuracy a calibrated binary classifier's loss is 0.37, above the softmax floor of 0.31:
    # a loss held there says nothing of a softmax, however accurate the model looks.
    n = 400
    run = make_run(_softmax_loss(n, seed, 2), meta={"config": {"num_classes": 2}},
                   scalars={"accuracy": np.full(n, 0.88)})
    assert check("softmax_before_cross_entropy", run) == []


@pytest.mark.parametrize("seed", range(3))
def test_a_six_class_model_at_78_percent_is_accurate_enough(seed):
    # A fixed bar of 80% missed this: at 78% a calibrated six-class model's loss (0.87) is well
    # under the floor (1.04), so a loss that never goes below the floor is the softmax's.
    n = 400
    run = make_run(_softmax_loss(n, seed, 6), meta={"config": {"num_classes": 6}},
                   scalars={"accuracy": np.full(n, 0.78)})
    [f] = check("softmax_before_cross_entropy", run)
    assert f.evidence["accuracy"] == pytest.approx(0.78)


def test_an_accuracy_printed_as_a_percentage_is_read_as_the_same_fraction():
    n = 400
    run = make_run(_softmax_loss(n, 0, 6), meta={"config": {"num_classes": 6}}, scalars={"accuracy": np.full(n, 78.0)})
    [f] = check("softmax_before_cross_entropy", run)
    assert f.evidence["accuracy"] == pytest.approx(0.78)


def test_silent_twin_an_accuracy_column_out_of_any_range_is_no_accuracy():
    # Above 100 it is neither a fraction nor a percentage (a count of correct samples): the detector
    # judges as with no accuracy logged, where the loss must hug the floor.
    n = 400
    above = _floor(6) + 0.1 * (math.log(6) - _floor(6)) + 0.001 * np.random.default_rng(0).standard_normal(n)
    run = make_run(above, meta={"config": {"num_classes": 6}}, scalars={"accuracy": np.full(n, 780.0)})
    assert check("softmax_before_cross_entropy", run) == []


@pytest.mark.parametrize("seed", range(5))
def test_healthy_classifier_below_the_floor_is_silent(seed):
    n = 400
    loss = healthy(n, seed, scale=math.log(10), floor=0.02)
    run = make_run(loss, meta={"config": {"num_classes": 10}}, scalars={"accuracy": np.linspace(0.3, 0.99, n)})
    assert check("softmax_before_cross_entropy", run) == []


def test_floor_with_low_accuracy_is_silent():
    n = 400
    run = make_run(_softmax_loss(n, 0, 10), meta={"config": {"num_classes": 10}},
                   scalars={"accuracy": np.full(n, 0.4)})
    assert check("softmax_before_cross_entropy", run) == []


def test_without_accuracy_only_a_loss_hugging_the_floor_fires():
    n = 400
    hug = make_run(_softmax_loss(n, 0, 10), meta={"config": {"num_classes": 10}})
    assert check("softmax_before_cross_entropy", hug)
    above = make_run(_floor(10) + 0.1 * (math.log(10) - _floor(10)) + 0.001 * np.random.default_rng(0).standard_normal(n),
                     meta={"config": {"num_classes": 10}})
    assert check("softmax_before_cross_entropy", above) == []


def test_without_classes_it_is_skipped():
    with pytest.raises(Skip, match="number of classes"):
        check("softmax_before_cross_entropy", make_run(_softmax_loss(200, 0, 10)))


def test_label_smoothing_that_reaches_the_floor_is_silent():
    """Binary targets smoothed by 0.2 have an entropy of 0.325, above ln(1 + 1/e) = 0.313."""
    n = 400
    run = make_run(_softmax_loss(n, 0, 2), meta={"config": {"num_classes": 2, "label_smoothing": 0.2}},
                   scalars={"accuracy": np.linspace(0.3, 0.97, n)})
    assert check("softmax_before_cross_entropy", run) == []
    run = make_run(_softmax_loss(n, 0, 10), meta={"config": {"num_classes": 10, "label_smoothing": 0.1}},
                   scalars={"accuracy": np.linspace(0.3, 0.97, n)})
    assert check("softmax_before_cross_entropy", run)  # 10 classes smoothed by 0.1: 0.5, far below 1.46


def _read(values, n, every=10):
    """A recorder column written on every ``every``-th step only (NaN elsewhere, as a missing read)."""
    col = np.full(n, np.nan)
    col[::every] = values
    return col


def _still_falling(n, k, seed, gap=0.45):
    """A loss from ln K down to ``gap`` of the floor-to-ln K band: short of the floor, as a run stopped
    early leaves it; the loss level alone cannot tell it from a healthy slow run."""
    rng = np.random.default_rng(seed)
    lo = _floor(k) + gap * (math.log(k) - _floor(k))
    t = np.arange(n) / n
    return lo + (math.log(k) - lo) * np.exp(-5 * t) * np.exp(0.02 * rng.standard_normal(n))


def _recorded(loss, k, *, scale, bounded=0.0, simplex=0.0, passes=1.0, amp=None, every=10):
    n = len(loss)
    scalars = {"ce_grad_scale": _read(scale, n, every), "backward_passes": _read(passes, n, every),
               "logits_in_unit_interval": _read(bounded, n, every),
               "logits_sum_to_one": _read(simplex, n, every)}
    if amp is not None:
        scalars["loss_scale"] = np.full(n, amp)
    return make_run(loss, meta={"config": {"num_classes": k}}, scalars=scalars)


@pytest.mark.parametrize("k", [2, 4, 10])
@pytest.mark.parametrize("seed", range(2))
def test_a_squeezed_logits_gradient_names_the_softmax_before_the_loss_reaches_its_floor(k, seed):
    n = 300
    rng = np.random.default_rng(seed)
    [f] = check("softmax_before_cross_entropy",
                _recorded(_still_falling(n, k, seed), k, scale=0.2 + 0.05 * rng.random(n // 10)))
    assert f.evidence["reading"] == "recorder: squeezed logits gradient"
    assert f.evidence["largest_logits_gradient"] <= 0.25 and f.evidence["reads"] == 30
    # The loss logged at every step: each read is judged by its own batch's loss.
    assert f.evidence["reads_with_loss_at_step"] == 30
    assert f.evidence["steps_with_loss_at_least_ln2_from_earlier_losses"] == 0


def _thinned(run, phase):
    """``run`` with its loss logged every 10 steps only (see ``_loss_every_10``)."""
    return build_run(name=run.path, status=run.status, meta=run.meta,
                     tables={"scalars": _loss_every_10(run.scalars, phase), "evals": run.evals,
                             "layers": run.layers, "events": run.events})


@pytest.mark.parametrize("k", [4, 10])
@pytest.mark.parametrize("phase", [0, 9])
def test_a_squeezed_gradient_fires_with_the_loss_logged_less_often_than_read(k, phase):
    # Read every 5 steps, the loss logged every 10: on steps 0, 10... half the read steps have their own
    # loss; on 9, 19... none has, and each is judged by the loss logged last before it.
    n = 600
    scale = 0.2 + 0.05 * np.random.default_rng(k).random(n // 5)
    [f] = check("softmax_before_cross_entropy",
                _thinned(_recorded(_still_falling(n, k, 0), k, scale=scale, every=5), phase))
    assert f.evidence["reading"] == "recorder: squeezed logits gradient" and f.evidence["reads"] == 120
    assert f.evidence["reads_with_loss_at_step"] == (60 if phase == 0 else 0)
    assert f.evidence["steps_with_loss_at_least_ln2_from_earlier_losses"] > 0


@pytest.mark.parametrize("k", [4, 10])
@pytest.mark.parametrize("phase", [0, 9])
def test_silent_twin_a_plain_gradient_with_the_loss_logged_less_often_than_read(k, phase):
    n = 600
    run = _thinned(_recorded(_still_falling(n, k, 0), k, scale=np.linspace(0.9, 0.6, n // 5), every=5), phase)
    assert check("softmax_before_cross_entropy", run) == []


@pytest.mark.parametrize("k", [2, 4, 10])
def test_silent_twin_a_plain_cross_entropys_gradient_on_a_loss_hugging_the_floor(k):
    # The loss level alone would fire (it settles on the floor); the recorder saw raw logits and a
    # gradient of a plain cross-entropy's size, so there is no softmax in between.
    n = 300
    run = _recorded(_softmax_loss(n, 0, k), k, scale=np.linspace(0.9, 0.6, n // 10))
    assert check("softmax_before_cross_entropy", run) == []


def test_softmax_outputs_fire_without_the_number_of_classes():
    n = 300
    run = make_run(_still_falling(n, 4, 0), scalars={"ce_grad_scale": _read(0.7, n),
                                                     "logits_in_unit_interval": _read(1.0, n),
                                                     "logits_sum_to_one": _read(1.0, n)})
    [f] = check("softmax_before_cross_entropy", run)
    assert f.evidence["reading"] == "recorder: outputs sum to 1" and f.evidence["classes"] is None


@pytest.mark.parametrize("k", [4, 10])
def test_silent_twin_logits_collapsed_into_the_unit_interval_of_a_model_that_learns_nothing(k):
    # Shuffled labels: the model outputs nearly equal logits that may lie in [0, 1] (rows not summing
    # to 1); the loss stays at ln K, far above the floor, and the plain gradient is unsqueezed.
    n = 300
    loss = math.log(k) + 0.01 * np.random.default_rng(k).standard_normal(n)
    assert check("softmax_before_cross_entropy", _recorded(loss, k, scale=0.77, bounded=1.0)) == []


def test_outputs_in_the_unit_interval_that_do_not_sum_to_one_leave_it_to_the_loss_level():
    # A sigmoid at the end: in [0, 1], rows not summing to 1. The loss hugging the floor decides.
    n, k = 300, 10
    f = check("softmax_before_cross_entropy", _recorded(_softmax_loss(n, 0, k), k, scale=0.8, bounded=1.0))
    assert f and f[0].evidence["reading"] == "loss level"


def test_the_loss_scale_and_the_micro_batches_are_divided_out():
    n, k = 300, 4
    loss = _still_falling(n, k, 0)
    # A GradScaler's 1024 on a squeezed gradient, a loss divided by 4 micro-batches: both still squeezed.
    assert check("softmax_before_cross_entropy", _recorded(loss, k, scale=0.25 * 1024, amp=1024.0))
    assert check("softmax_before_cross_entropy", _recorded(loss, k, scale=0.25 / 4, passes=4.0))
    # Silent twin: a plain cross-entropy divided by 4 reads 0.2 per micro-batch, 0.8 per loss.
    assert check("softmax_before_cross_entropy", _recorded(loss, k, scale=0.8 / 4, passes=4.0)) == []


def test_below_the_floor_no_reading_fires():
    n, k = 300, 4
    loss = np.linspace(math.log(k), 0.05, n)
    assert check("softmax_before_cross_entropy", _recorded(loss, k, scale=0.2, bounded=1.0, simplex=1.0)) == []


def test_reads_while_the_loss_was_low_leave_it_to_the_loss_level():
    # A squeezed gradient proves a softmax only where a plain cross-entropy's would be large (loss >= ln 2):
    # a resumed run whose every read is late, at a loss of 0.5, falls back to the loss level (which is
    # silent here: the loss is not settled on the floor of K=2).
    n = 300
    loss = 0.5 + 0.01 * np.random.default_rng(0).standard_normal(n)
    assert check("softmax_before_cross_entropy", _recorded(loss, 2, scale=0.2)) == []


@pytest.mark.parametrize("phase", [0, 9])
def test_silent_twin_reads_while_the_loss_was_low_judged_by_the_losses_logged_before_them(phase):
    # The same resumed run logging its loss every 10 steps, read every 5: the losses logged before the
    # read steps are as low, so none is taken for a loss above ln 2.
    n = 600
    loss = 0.5 + 0.01 * np.random.default_rng(0).standard_normal(n)
    run = _thinned(_recorded(loss, 2, scale=0.2, every=5), phase)
    assert check("softmax_before_cross_entropy", run) == []


def _train_recorded(torch, path, softmax, *, steps=150, layers_every=10):
    """A 4-class MLP trained with the recorder, a softmax in the loop (not the model) when ``softmax``:
    the outputs are raw logits and only the gradient shows it."""
    from recorders.torch import Recorder

    torch.manual_seed(0)
    x = torch.randn(512, 12)
    y = (x[:, :4] @ torch.randn(4, 4)).argmax(1)
    model = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(path, model, opt, config={"num_classes": 4}, layers_every=layers_every,
                  handle_signals=False, announce=False) as rec:
        for _ in range(steps):
            i = torch.randint(0, 512, (32,))
            out = model(x[i])
            loss = torch.nn.functional.cross_entropy(torch.softmax(out, -1) if softmax else out, y[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
            rec.step(loss)
    return rec.run_dir


@pytest.mark.parametrize("softmax", [True, False])
def test_real_recorded_run_with_a_softmax_between_model_and_loss(tmp_path, softmax):
    # 150 steps stop far short of the floor. Its twin feeds the logits straight to the loss.
    torch = pytest.importorskip("torch")
    found = [f for f in analyze(_train_recorded(torch, tmp_path / "run", softmax)).findings
             if f.code == "softmax_before_cross_entropy"]
    if softmax:
        assert found and found[0].evidence["reading"] == "recorder: squeezed logits gradient"
        assert found[0].evidence["late_level"] > found[0].evidence["softmax_floor"]
    else:
        assert found == []


@pytest.mark.parametrize("softmax", [True, False])
def test_real_recorded_run_logging_its_loss_every_10_steps(tmp_path, softmax):
    # The loop keeps its loss on (i + 1) % 10 == 0 while the recorder reads every 5 steps: no read step
    # has a loss of its own, and the loss logged last before each read says whether it was above ln 2.
    torch = pytest.importorskip("torch")
    recorded = _train_recorded(torch, tmp_path / "run", softmax, steps=300, layers_every=5)
    run = _copy_editing_scalars(recorded, tmp_path / "thinned", lambda table: _loss_every_10(table, 9))
    found = [f for f in analyze(run).findings if f.code == "softmax_before_cross_entropy"]
    if softmax:
        assert found and found[0].evidence["reading"] == "recorder: squeezed logits gradient"
        assert found[0].evidence["reads"] == 60 and found[0].evidence["reads_with_loss_at_step"] == 0
        assert found[0].evidence["steps_with_loss_at_least_ln2_from_earlier_losses"] > 0
    else:
        assert found == []
