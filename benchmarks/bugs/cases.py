"""One function per bug: ``case(fixed) -> (Loop, truth)``; ``CASES`` maps ``(bug, model)`` to it."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch.nn import functional as F

from benchmarks.bugs._cases import (
    BNCNN,
    LSTMClassifier,
    TinyDecoder,
    autoencoder,
    blobs,
    conv1d,
    images,
    mlp,
    split,
    tokens,
    waves,
)
from benchmarks.bugs._loop import Loop, classifier_loop


def _late(values, share=0.2):
    return values[-max(1, int(len(values) * share)):]


def softmax_mlp(fixed: bool):
    k = 10
    model = mlp(20, k, softmax=not fixed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loop = classifier_loop(blobs(1200, 20, k, seed=1, spread=0.6), k, model, opt, "mlp", n_val=240, epochs=15)

    def truth(m, lp):
        with torch.no_grad():
            out = lp.model(lp.xv)
        sums_to_one = bool(torch.allclose(out.sum(-1), torch.ones(len(out)), atol=1e-4))
        floor = math.log1p((k - 1) / math.e)
        late_min = float(min(_late(m["losses"])))
        acc = float(np.mean(_late(m["accuracy"])))
        return sums_to_one and late_min >= floor - 0.01 and acc >= 0.9, {
            "outputs_sum_to_one": sums_to_one, "late_min_loss": late_min, "floor": floor, "late_accuracy": acc}
    return loop, truth


def leak_conv1d(fixed: bool):
    k = 4
    x, y = waves(1000, k, seed=2, noise=1.2)
    onehot = F.one_hot(y, k).float()[:, :, None].expand(-1, -1, x.shape[-1])  # the label, one channel a class
    x = torch.cat([x, torch.zeros_like(onehot) if fixed else onehot], dim=1)

    def augment(xb, g):  # channel dropout on the training inputs: the leak is visible on part of the batch
        keep = (torch.rand(xb.shape[0], xb.shape[1], 1, generator=g) > 0.4).float()
        return xb * keep

    model = conv1d(k, channels=1 + k)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loop = classifier_loop((x, y), k, model, opt, "conv1d", epochs=16, augment=augment, evals_per_epoch=2)

    def truth(m, lp):
        with torch.no_grad():
            full = float(F.cross_entropy(lp.model.eval()(lp.xv), lp.yv))
            zeroed = lp.xv.clone()
            zeroed[:, 1:] = 0
            cut = float(F.cross_entropy(lp.model(zeroed), lp.yv))
        is_label = bool(torch.equal(lp.xv[:, 1:, 0].argmax(-1), lp.yv)) and bool(lp.xv[:, 1:].abs().sum() > 0)
        return is_label and cut >= 5 * full, {"val_loss": full, "val_loss_label_zeroed": cut,
                                              "feature_is_label": is_label}
    return loop, truth


def train_mode_lstm(fixed: bool):
    k = 4
    model = LSTMClassifier(k, dropout=0.5)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loop = classifier_loop(tokens(1100, k, seed=3), k, model, opt, "lstm", config={"dropout": 0.5}, epochs=10,
                           eval_mode=fixed, evals_per_epoch=2)

    def truth(m, lp):
        ratio = float(np.mean(np.array(m["val_train_mode"]) / np.array(m["val_eval_mode"])))
        return (not lp.eval_mode) and ratio >= 1.1, {"train_over_eval_val_loss": ratio,
                                                     "validated_in_training_mode": not lp.eval_mode}
    return loop, truth


def no_grad_cnn(fixed: bool):
    k = 5
    model = BNCNN(k, detach_stem=not fixed)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loop = classifier_loop(images(1000, k, seed=4), k, model, opt, "bn_cnn", epochs=10)

    def truth(m, lp):
        return bool(m["no_grad"]) and len(m["no_grad"]) < len(m["initial"]), {"params_without_grad": m["no_grad"]}
    return loop, truth


def not_in_optimizer_decoder(fixed: bool):
    k = 4
    model = TinyDecoder(k)
    params = model.parameters() if fixed else [p for n, p in model.named_parameters() if not n.startswith("head")]
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
    loop = classifier_loop(tokens(1000, k, seed=5), k, model, opt, "decoder", epochs=10)

    def truth(m, lp):
        same = [n for n in m["outside"] if torch.equal(m["initial"][n], m["final"][n])]
        return bool(m["outside"]) and same == m["outside"], {"params_outside_optimizer": m["outside"],
                                                             "unchanged": same}
    return loop, truth


def lr_collapse_cnn(fixed: bool):
    k = 5
    model = BNCNN(k)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.8)
    loop = classifier_loop(images(1160, k, seed=6), k, model, opt, "bn_cnn", epochs=12, sched=sched,
                           sched_per_batch=not fixed)

    def truth(m, lp):
        spe = m["steps_per_epoch"]
        fell = m["lr"][min(2 * spe, len(m["lr"]) - 1)] / m["lr"][0]
        per_step = m["scheduler_steps"] == m["optimizer_steps"]
        return per_step and fell < 1e-4, {"lr_ratio_after_two_epochs": fell, "scheduler_steps": m["scheduler_steps"],
                                          "optimizer_steps": m["optimizer_steps"]}
    return loop, truth


def clipping_autoencoder(fixed: bool):
    g = torch.Generator().manual_seed(7)
    z = torch.randn(1000, 4, generator=g)
    x = torch.tanh(z @ torch.randn(4, 16, generator=g)) + 0.05 * torch.randn(1000, 16, generator=g)
    xt, xv = x[200:], x[:200]
    model = autoencoder()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    clip = 1.0 if fixed else 1e-4
    loop = Loop(model, opt, xt, xt, xv, xv, F.mse_loss, {"max_grad_norm": clip, "model": "autoencoder"}, epochs=12,
                clip=clip, classify=False)

    def truth(m, lp):
        kept = float(np.nanmedian(m["kept"]))
        return kept <= 1e-3, {"median_kept": kept}
    return loop, truth


def unshuffled_mlp(fixed: bool):
    k = 4
    x, y = blobs(840, 10, k, seed=8, spread=1.2)
    xt, yt, xv, yv = split(x, y, 200)
    order = torch.argsort(yt, stable=True)  # class-sorted, as read from per-class folders
    xt, yt = xt[order], yt[order]
    model = mlp(10, k)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loop = Loop(model, opt, xt, yt, xv, yv, F.cross_entropy, {"num_classes": k, "model": "mlp"}, epochs=15,
                shuffle=fixed)

    def truth(m, lp):
        same = all(o == m["orders"][0] for o in m["orders"])
        purity = float(np.mean(m["purity"]))
        return same and purity >= 0.9, {"same_order_every_epoch": same, "batch_majority_share": purity}
    return loop, truth


def raw_inputs_mlp(fixed: bool):
    k = 4
    x, y = blobs(1000, 12, k, seed=9, spread=0.8)
    scale = 10 ** torch.linspace(0, 5, 12)  # features from 1 to 1e5, as raw measurements come
    x = x * scale + 3 * scale
    if fixed:
        x = (x - x.mean(0)) / x.std(0)
    model = mlp(12, k)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loop = classifier_loop((x, y), k, model, opt, "mlp", epochs=10)

    def truth(m, lp):
        sd = lp.x.std(0)
        span = float(torch.log10(sd.max() / sd.min()))
        return span >= 3, {"feature_sd_decades": span}
    return loop, truth


def accumulation_conv1d(fixed: bool):
    k = 4
    model = conv1d(k)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    loop = classifier_loop(waves(1224, k, seed=10), k, model, opt, "conv1d",
                           config={"gradient_accumulation_steps": 8}, epochs=12, batch=8, accum=8,
                           scale_accum=fixed)

    def truth(m, lp):
        r = float(np.median(m["accum_over_max_micro"]))
        return r > 1, {"accumulated_over_largest_micro": r}
    return loop, truth


def weight_decay_mlp(fixed: bool):
    k = 4
    model = mlp(12, k, hidden=48)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4 if fixed else 10.0)
    loop = classifier_loop(blobs(1000, 12, k, seed=11), k, model, opt, "mlp", epochs=10)

    def truth(m, lp):
        share = float(np.mean(m["decay_share"]))
        ratios = [float(m["final"][n].norm() / m["initial"][n].norm()) for n in m["initial"]
                  if m["initial"][n].norm() > 0]
        r = float(np.median(ratios))
        return share >= 0.5 and r <= 0.1, {"decay_dominates_share": share, "median_norm_ratio": r}
    return loop, truth


CASES = {
    ("softmax_before_cross_entropy", "mlp"): softmax_mlp,
    ("validation_leak", "conv1d"): leak_conv1d,
    ("validation_in_train_mode", "lstm"): train_mode_lstm,
    ("parameters_without_gradient", "bn_cnn"): no_grad_cnn,
    ("parameters_not_in_optimizer", "decoder"): not_in_optimizer_decoder,
    ("lr_schedule_collapse", "bn_cnn"): lr_collapse_cnn,
    ("clipping_removes_updates", "autoencoder"): clipping_autoencoder,
    ("data_not_shuffled", "mlp"): unshuffled_mlp,
    ("inputs_not_normalized", "mlp"): raw_inputs_mlp,
    ("accumulation_unscaled", "conv1d"): accumulation_conv1d,
    ("weight_decay_collapse", "mlp"): weight_decay_mlp,
}
