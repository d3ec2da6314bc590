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
