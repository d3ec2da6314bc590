"""Healthy runs that look alarming (issue 21's targets): no bug, shapes a bug detector could mistake.

Each is ``case(fixed) -> (Loop, truth)`` like the bug cases; only the
``fixed`` form exists (the run is healthy), and its truth is that it learned
(``CONTROL_CRITERION``), measured in torch. The generator writes them as
``control-<kind>-<model>`` with ``expected_code`` null: no warning or error
is the right answer.
"""

from __future__ import annotations

import numpy as np
import torch

from benchmarks.bugs._cases import BNCNN, LSTMClassifier, TinyDecoder, blobs, images, mlp, tokens
from benchmarks.bugs._loop import classifier_loop

CONTROL_CRITERION = ("no bug switch is on, and the median training loss of the last 10% of steps is at most half "
                     "that of the first 10% (the run learned)")


def _learned(m, lp):
    losses = np.asarray(m["losses"])
    k = max(1, len(losses) // 10)
    first, last = float(np.median(losses[:k])), float(np.median(losses[-k:]))
    return last <= 0.5 * first, {"first_loss": first, "last_loss": last}


def warm_restarts_lstm(fixed: bool):
    """A per-batch cosine schedule with warm restarts: the rate touches ~0 at every cycle's end."""
    k = 4
    model = LSTMClassifier(k)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=60, eta_min=0.0)
    loop = classifier_loop(tokens(1100, k, seed=21), k, model, opt, "lstm", epochs=10, sched=sched,
                           sched_per_batch=True)
    return loop, _learned


def two_phase_unfreeze_cnn(fixed: bool):
    """The stem frozen (requires_grad False) for three epochs, then fine-tuned with everything else."""
    k = 5
    model = BNCNN(k)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def on_epoch(epoch):
        for p in model.stem.parameters():
            p.requires_grad_(epoch >= 3)

    loop = classifier_loop(images(1000, k, seed=22), k, model, opt, "bn_cnn", epochs=10, on_epoch=on_epoch)
    return loop, _learned


def batch_four_mlp(fixed: bool):
    """Batches of 4: a noisy loss, shuffled."""
    k = 4
    model = mlp(10, k)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loop = classifier_loop(blobs(600, 10, k, seed=23, spread=1.0), k, model, opt, "mlp", epochs=4, batch=4)
    return loop, _learned


def one_cycle_decoder(fixed: bool):
    """OneCycleLR stepped per batch (as it should be): it ends 1e5 below its peak, at the end."""
    k = 4
    model = TinyDecoder(k)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    loop = classifier_loop(tokens(1000, k, seed=24), k, model, opt, "decoder", epochs=10)
    loop.sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=10 * (800 // 32))
    loop.sched_per_batch = True
    return loop, _learned


CONTROLS = {
    ("warm_restarts", "lstm"): warm_restarts_lstm,
    ("two_phase_unfreeze", "bn_cnn"): two_phase_unfreeze_cnn,
    ("batch_four", "mlp"): batch_four_mlp,
    ("one_cycle", "decoder"): one_cycle_decoder,
}
