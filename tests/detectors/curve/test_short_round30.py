"""Round 30's curve readings of logs with no training loss: a held-out accuracy that collapsed (the model
lost what it had learnt) is a divergence; one that slipped a few points (overfitting's cost) is not."""

from __future__ import annotations

from runlens import analyze


def _log(tmp_path, accs):
    path = tmp_path / "cifar.log"
    path.write_text("".join(f"epoch: {e:4d} test acc: {a:.2f}%\n" for e, a in enumerate(accs, start=1)))
    return str(path)


def test_a_held_out_accuracy_that_fell_to_chance_and_stayed_diverged(tmp_path):
    d = analyze(_log(tmp_path, [60.67, 71.65, 72.22, 72.32, 71.14, 10.00, 10.00, 10.00]))
    assert d.curve.label == "diverged" and d.curve.evidence["kind"] == "held_out_accuracy_collapsed"
    assert d.curve.evidence["best_accuracy"] == 0.7232


def test_a_held_out_accuracy_that_slipped_a_few_points_did_not_diverge(tmp_path):
    d = analyze(_log(tmp_path, [60.67, 71.65, 72.22, 72.32, 71.14, 69.8, 68.9, 68.1]))
    assert d.curve.label != "diverged"


def test_one_bad_evaluation_that_recovers_is_no_collapse(tmp_path):
    d = analyze(_log(tmp_path, [60.67, 71.65, 72.22, 72.32, 71.14, 10.00, 72.5, 73.0]))
    assert d.curve.evidence.get("kind") != "held_out_accuracy_collapsed"


def test_an_accuracy_that_never_learnt_is_no_collapse(tmp_path):
    d = analyze(_log(tmp_path, [12.0, 15.0, 11.0, 10.0, 5.0, 5.0, 5.0, 5.0]))
    assert d.curve.evidence.get("kind") != "held_out_accuracy_collapsed"


def test_a_settled_short_log_says_how_little_it_moves_without_rounding_to_0(tmp_path):
    path = tmp_path / "train.log"
    losses = [0.8705, 0.3242, 0.0946, 0.0753, 0.0502, 0.0344, 0.03436, 0.03386, 0.03292, 0.03154, 0.03256]
    path.write_text("".join(f"Epoch: {e}\tTrain Loss: {v}\n" for e, v in enumerate(losses)))
    d = analyze(str(path))
    assert d.curve.label == "healthy" and d.curve.evidence["kind"] == "short_settled"
    assert " 0% as much" not in d.curve.reason
