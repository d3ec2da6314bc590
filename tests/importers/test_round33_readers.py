"""Round 33's readers, from the nineteenth thread set's misses (a development set since its one grading in
round 32): each shape on a synthetic log of its own, with a silent twin.

- an evaluation printed on every training line of a log whose lines share an epoch (Flair's ``end of
  split`` lines, each with its ``valid loss``) is one evaluation per line, not one per epoch;
- a log several processes wrote, each line tagged with its rank (OpenMPI's ``[1,0]<stderr>:``,
  torchelastic's ``[default7]:``), is read as the rank that printed the most lines; another rank's line
  is left out only where it repeats a kept line's shape, so a crash it printed is still read.
"""

from __future__ import annotations

from runlens import analyze
from runlens.io.importers._ranks import one_rank
from runlens.io.loader import load_run


def _write(tmp_path, lines, name="train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


# -- an evaluation on every line ----------------------------------------------------------------------

def _splits(vals):
    return [f"| end of split {262 + i:3d} /442 | epoch   1 | time: 57.05s | valid loss {v:5.2f} | "
            f"valid ppl {2.718 ** v:8.2f} | learning rate 0.0012" for i, v in enumerate(vals)]


def test_an_evaluation_on_every_line_of_one_epoch_is_read_at_each_line(tmp_path):
    run = load_run(str(_write(tmp_path, _splits([2.94] * 11))))
    assert run.evals.column("val_loss").to_pylist() == [2.94] * 11
    assert len(set(run.evals.column("step").to_pylist())) == 11
    d = analyze(run)
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_frozen_evaluations", d.curve


def test_silent_twin_evaluations_that_move_are_no_frozen_run(tmp_path):
    d = analyze(str(_write(tmp_path, _splits([2.94 - 0.03 * i for i in range(11)]))))
    assert d.curve.label != "underfitting", d.curve


def test_silent_twin_one_evaluation_an_epoch_after_its_progress_lines_stays_one(tmp_path):
    lines = []
    for e in (1, 2):
        lines += [f"epoch {e} batch {b}/3 loss {2.0 - 0.1 * b - 0.3 * e:.3f}" for b in (1, 2, 3)]
        lines.append(f"epoch {e} valid loss {1.9 - 0.3 * e:.3f}")
    run = load_run(str(_write(tmp_path, lines)))
    assert run.evals is not None and run.evals.num_rows == 2


# -- one rank of several ------------------------------------------------------------------------------

_HOOK = "INFO:tensorflow:cross_entropy = {v}, learning_rate = 0.0138, train_mean_iou = 0.035 (7.3 sec)"


def test_interleaved_ranks_are_read_as_one_rank(tmp_path):
    lines = []
    for a, b in zip((2.31, 2.05, 1.83, 1.62, 1.44, 1.30), (81.0, 8687.0, 90.2, 69774.0, 75.1, 9000.0), strict=True):
        lines += [f"[1,0]<stderr>:{_HOOK.format(v=a)}", f"[1,1]<stderr>:{_HOOK.format(v=b)}"]
    kept = [ln for chunk in one_rank([lines]) for ln in chunk]
    assert len(kept) == 6 and all(ln.startswith("INFO:tensorflow:cross_entropy = ") for ln in kept)
    assert "8687" not in " ".join(kept)
    losses = load_run(str(_write(tmp_path, lines))).scalars.column("loss").to_pylist()
    assert losses == [2.31, 2.05, 1.83, 1.62, 1.44, 1.30]


def test_a_crash_another_rank_printed_is_kept_and_the_logging_rank_read(tmp_path):
    lines = [f"[default7]: iteration {i:8d}/  115311 | lm loss: {2.2 - 0.01 * i:.6E} | grad norm: 0.3"
             for i in range(1, 31)]
    lines[12:12] = ["[default3]:terminate called after throwing an instance of 'c10::CUDAError'",
                    "[default3]:  what():  CUDA error: unknown error"]
    kept = [ln for chunk in one_rank([lines]) for ln in chunk]
    assert len(kept) == 32 and any("CUDAError" in ln for ln in kept)
    assert not any(ln.startswith("[default") for ln in kept)
    run = load_run(str(_write(tmp_path, lines)))
    assert run.scalars.num_rows == 30


def test_silent_twin_an_untagged_log_and_a_bare_index_pass_unchanged():
    lines = ["[3]: loss 0.5", "epoch 1 loss 0.4", "[rank]: loss 0.3", "[1,2000]: loss 0.2", "[1,4000]: loss 0.1"]
    assert [ln for chunk in one_rank([lines]) for ln in chunk] == lines


def test_silent_twin_a_rank_that_prints_other_lines_keeps_them():
    lines = ["[1,0]<stdout>:step 1 loss 0.9", "[1,0]<stdout>:step 2 loss 0.8", "[1,1]<stdout>:rank 1 ready"]
    assert [ln for chunk in one_rank([lines]) for ln in chunk] == ["step 1 loss 0.9", "step 2 loss 0.8", "rank 1 ready"]
