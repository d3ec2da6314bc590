"""Round 20: a held-out loss that undid its whole fall in a short log (``short_val_undone``).

Found on the sixth thread set (a development set since its one grading): monodepth's five epochs,
validation 1.39 -> 1.30 -> 1.287 -> 1.32 -> 1.51 while training fell at every epoch. Two rises after
the minimum are too few for their own rank test; the training loss falling at each of the five
evaluations is exact at p = 1/5!, and a held-out loss that ends above its first value gave back all
it had gained. Each with silent twins."""

from __future__ import annotations

import pytest

from runlens import analyze

TRAIN = [1.8654, 1.7082, 1.6671, 1.6340, 1.6094]
VAL = [1.3897, 1.2999, 1.2872, 1.3201, 1.5058]


def _log(tmp_path, train, val):
    lines = [f"Epoch: {e} train_loss: {t} val_loss: {v} time: {985.6 * e:.1f} s"
             for e, (t, v) in enumerate(zip(train, val, strict=True), 1)]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return analyze(path)


def test_a_held_out_loss_that_undid_its_fall_while_training_fell_is_overfitting(tmp_path):
    diag = _log(tmp_path, TRAIN, VAL)
    assert diag.curve.label == "overfitting", diag.curve.reason
    ev = diag.curve.evidence
    assert ev["kind"] == "short_val_undone" and ev["evals_after_min"] == 2 and ev["step"] == 3
    assert ev["gap_order_p"] == pytest.approx(1 / 120)
    assert all(b > a for a, b in zip(ev["gaps"], ev["gaps"][1:], strict=False))
    assert "overfitting" in [f.code for f in diag.findings]


@pytest.mark.parametrize("why, train, val", [
    ("the training loss went up once: the gap narrowed there", [1.8654, 1.7082, 1.7171, 1.6340, 1.6094], VAL),
    ("the held-out loss ends below its first value: a fall kept", TRAIN, [1.3897, 1.2999, 1.2872, 1.3201, 1.3500]),
    ("it went back down at the last evaluation", TRAIN, [1.3897, 1.2999, 1.2872, 1.5058, 1.4201]),
    ("three evaluations: 1/3! is no test", TRAIN[:3], [1.3897, 1.2999, 1.4058]),
])
def test_silent_twins_of_an_undone_fall(tmp_path, why, train, val):
    diag = _log(tmp_path, train, val)
    assert diag.curve.evidence.get("kind") != "short_val_undone", why
    assert diag.curve.label != "overfitting", (why, diag.curve.reason)
