"""Regenerate every sample run: ``python sample_runs/generate.py [NAME ...]``.

Each sample is a small real training run (CPU, a few seconds) recorded by
``recorders.torch.Recorder`` into ``sample_runs/<name>/``, with its expected
diagnosis in ``expected.json`` beside the tables. Before a run's labels are
written, :mod:`_verify` checks the run really shows the symptom, from the
trainer's own measurements (``truth-*.npz``, taken in torch during training,
independently of runlens); a sample whose check fails is reported and the
command exits 1, so a label is never shipped on faith.

``must_not_include`` is every finding code that is neither required nor
listed as "may" (true of the data but not the point of the sample), so the
samples also catch false alarms.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.dont_write_bytecode = True  # keep sample_runs/*/ exactly the run directories
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _verify as V  # noqa: E402
from _training import Spec, run_spec  # noqa: E402

CURVE_CODES = ("overfitting", "underfitting", "unstable", "diverged")
CODES = (
    "nonfinite_loss", "nonfinite_gradient", "exploding_gradients", "vanishing_gradients",
    "dead_layers", "learning_rate_too_low", "learning_rate_too_high", "loss_spikes", "plateau",
    "weight_norm_growth", "late_loss_variance", "no_validation", "crash_oom",
    "crash_shape_mismatch", "crash_device_mismatch", "crash_dtype_mismatch", "crash_other", "killed",
)


@dataclass(frozen=True)
class Sample:
    spec: Spec
    curve: str
    status: str
    must: tuple[str, ...]
    why: str
    checks: tuple = ()
    may: tuple[str, ...] = ()

    def expected(self) -> dict:
        must = list(self.must)
        if self.spec.eval_every is None and "no_validation" not in must:
            must.append("no_validation")
        if self.curve in CURVE_CODES and self.curve not in must:
            must.append(self.curve)  # every non-healthy curve label is a finding of that code
        excluded = set(must) | set(self.may)
        return {
            "curve": self.curve,
            "status": self.status,
            "must_include": must,
            "must_not_include": [c for c in CODES if c not in excluded],
            "may_include": list(self.may),
            "why": self.why,
        }


# The healthy baseline every fault is a twin of: an MLP on a learnable
# synthetic task, fresh samples each step (so no overfitting), Adam with a
# cosine decay, validation every 25 steps.
BASE = dict(steps=600, batch_size=128, schedule="cosine")
HEALTHY_CHECKS = (V.learns, V.settles, V.val_follows, V.bounded_grads, V.no_dead_layer, V.starts_falling)


def _crash(kind: str, code: str, needles: tuple[str, ...], why: str) -> Sample:
    return Sample(Spec(f"crash_{kind}", crash=kind, crash_at=250, **BASE), "healthy", "crashed", (code,),
                  why, (V.crashed_with(*needles), V.learns))


SAMPLES: tuple[Sample, ...] = (
    Sample(Spec("healthy", **BASE), "healthy", "finished", (),
           "MLP + Adam with cosine decay on fresh data: loss falls and settles, validation follows",
           HEALTHY_CHECKS),
    Sample(Spec("no_validation", eval_every=None, **BASE), "healthy", "finished", (),
           "the healthy run without any validation pass", (V.learns, V.settles, V.no_validation)),
    Sample(Spec("overfitting", n_train=256, label_noise=0.2, width=256, depth=2, lr=3e-4, steps=1000,
                batch_size=32, eval_every=20), "overfitting", "finished", (),
           "256 noisy examples, 256-wide MLP: training loss goes to ~0 while validation bottoms out "
           "near step 120 and then doubles", (V.overfits,)),
    Sample(Spec("lr_too_low", optimizer="sgd", lr=1e-4, steps=500, extra={"twin_lr": 0.2}), "underfitting", "finished",
           ("learning_rate_too_low",),
           "plain SGD at lr=1e-4: gradients are healthy in every layer but updates are ~4e-6 of the "
           "weights, so the loss stays at ln(4)", (V.flat, V.higher_lr_learns)),
    Sample(Spec("lr_too_high", activation="tanh", optimizer="momentum", lr=1.0, clip=1.0, steps=600,
                batch_size=256, extra={"twin_lr": 0.05}), "unstable", "finished", ("learning_rate_too_high",),
           "SGD+momentum at lr=1 (clipped to norm 1, so it stays finite): each step moves the weights by "
           "~1.5% (5x the healthy run); the loss drops to ~1.0 in a few steps, then swings between 0.9 and 1.1 "
           "(the healthy twin reaches 0.54), validation jumps by +-20% to the end, and the weights "
           "grow 13x",
           (V.lower_lr_does_better, V.bounded_grads),
           may=("late_loss_variance", "loss_spikes", "weight_norm_growth")),
    Sample(Spec("nan_divergence", optimizer="momentum", lr=2.0, depth=3, steps=120), "diverged", "finished",
           ("nonfinite_loss", "nonfinite_gradient", "exploding_gradients"),
           "SGD+momentum at lr=2: the gradient norm grows from ~0.3 to ~1e12 in 45 steps, then the loss is NaN",
           (V.explodes, V.nonfinite_loss),
           may=("learning_rate_too_high", "weight_norm_growth", "loss_spikes", "late_loss_variance")),
    Sample(Spec("numerical_nan", nan_at=300, steps=360, batch_size=128, schedule="cosine"), "diverged",
           "finished", ("nonfinite_loss", "nonfinite_gradient"),
           "healthy training until step 300, where a batch with a constant feature makes the per-batch "
           "standardization divide 0 by 0; gradients were steady right before",
           (V.healthy_until_nan,)),
    Sample(Spec("vanishing_gradients", activation="sigmoid", depth=5, width=32, init_gain=0.5,
                optimizer="sgd", lr=0.5, steps=500), "underfitting", "finished", ("vanishing_gradients",),
           "6-layer sigmoid MLP with half-size init: the first layer's gradient is ~1e-5 of the last's, "
           "the loss stays at ln(4)", (V.vanishing, V.flat, V.at_chance)),
    Sample(Spec("exploding_gradients", model="linear", loss="mse", optimizer="sgd", lr=2.1, steps=400,
                stop_grad_norm=1e5), "diverged", "finished", ("exploding_gradients",),
           "linear regression with SGD past its stability limit: the gradient norm grows ~6e4x in 240 "
           "steps and the loss without bound, until the user's watchdog stops training",
           (V.explodes,), may=("learning_rate_too_high", "weight_norm_growth", "loss_spikes",
                               "late_loss_variance")),
    Sample(Spec("dead_layer", frozen_first=True, width=128, steps=600, batch_size=128), "healthy", "finished",
           ("parameters_not_in_optimizer", "dead_layers"),
           "the input layer is left out of the optimizer: it gets gradients but its weights never "
           "change, while the rest of the MLP learns", (V.dead_layer, V.learns)),
    Sample(Spec("loss_spikes", spike_every=150, spike_scale=3.0, steps=700, batch_size=128,
                schedule="cosine"), "healthy", "finished", ("loss_spikes",),
           "every 150 steps a corrupted batch (shuffled labels, inputs x3) spikes the loss ~14x; the "
           "next step is back to normal", (V.spikes, V.val_follows)),
    Sample(Spec("weight_norm_growth", loss="nll_raw", steps=1000, eval_every=50), "healthy", "finished",
           ("weight_norm_growth",),
           "nll_loss applied to raw logits (log_softmax forgotten): the loss is -logit[y], unbounded "
           "below, so Adam grows the weights steadily (>10x) and the loss falls without end",
           (V.weight_growth,), may=("exploding_gradients",)),
    Sample(Spec("late_loss_variance", late_batch_size=2, late_at=0.75, steps=800, batch_size=128),
           "unstable", "finished", ("late_loss_variance",),
           "for the last quarter the batches shrink from 128 examples to 2 (an accumulation setting "
           "lost on resume): the loss's step-to-step noise grows ~30x while its level stays",
           (V.late_noise,), may=("loss_spikes",)),
    Sample(Spec("underfitting", task="random_labels", classes=10, steps=500), "underfitting", "finished",
           ("loss_at_chance",),
           "labels independent of the inputs: the loss is pinned at ln(10)=2.303, nothing to learn",
           (V.flat, V.at_chance)),
    Sample(Spec("plateau", schedule="jump", lr=1e-5, jump_factor=100.0, jump_at=0.5, steps=600,
                batch_size=128), "healthy", "finished", ("plateau",),
           "Adam at lr=1e-5 for 300 steps (flat at ln(4)), then the schedule raises it to 1e-3 and the "
           "loss falls to ~0.55", (V.plateau_then_falls,), may=("learning_rate_too_low",)),
    _crash("oom", "crash_oom", ("can't allocate memory",),
           "healthy training, then at step 250 padding a batch to a corrupt length asks the CPU allocator "
           "for petabytes"),
    _crash("shape", "crash_shape_mismatch", ("shapes cannot be multiplied",),
           "at step 250 a data shard with 3 extra feature columns reaches the first Linear layer"),
    _crash("dtype", "crash_dtype_mismatch", ("must have the same dtype",),
           "at step 250 a data shard saved from numpy as float64 meets float32 weights"),
    _crash("device", "crash_device_mismatch", ("is not on the expected device",),
           "at step 250 class reweighting starts with a weight tensor that was created on the meta "
           "device (the CPU's only other device)"),
    _crash("other", "crash_other", ("out of bounds",),
           "at step 250 a label outside the class range reaches cross_entropy (IndexError)"),
    Sample(Spec("crash_at_start", crash="shape", crash_at=0, **BASE), "insufficient_data", "crashed",
           ("crash_shape_mismatch",),
           "the first batch already has 3 extra feature columns: the run dies on step 0 and leaves "
           "run.json and the exception event, no scalars", (V.crashed_with("shapes cannot be multiplied"), V.no_scalars),
           may=("no_validation",)),
    Sample(Spec("killed", kill_at=350, **BASE), "healthy", "killed", ("killed",),
           "the training process is SIGKILLed at step 350: run.json still says running, the pid is "
           "gone, rows after the last flush (step 299) are lost", (V.status_is("running"), V.learns)),
    Sample(Spec("resumed", resume_crash_at=350, ckpt_every=100, compact=False, **BASE), "healthy", "finished", (),
           "attempt 1 dies at step 350 (a DataLoader worker exits), attempt 2 resumes from the step-300 "
           "checkpoint and finishes: steps 300-349 are written twice (parts left uncompacted, so "
           "the repeated rows are on disk for the reader to deduplicate)",
           (V.resumed, V.learns, V.settles, V.val_follows)),
)


def generate(sample: Sample, root: Path) -> tuple[bool, dict, float]:
    out = root / sample.spec.name
    if out.exists():
        if not (out / "run.json").exists() and not (out / "expected.json").exists():
            raise SystemExit(f"{out} exists and is not a sample run; refusing to delete it")
        shutil.rmtree(out)
    t0 = time.monotonic()
    run_spec(sample.spec, out)
    elapsed = time.monotonic() - t0
    ok, results = V.run_checks(out, sample.checks)
    (out / "expected.json").write_text(json.dumps(sample.expected(), indent=2) + "\n")
    return ok, results, elapsed


def write_index(root: Path) -> None:
    """sample_runs/README.md: what each run shows, kept in step with SAMPLES."""
    lines = ["# Sample runs", "",
             "Real training runs recorded by `recorders.torch.Recorder` from the small scripts in this folder "
             "(`_training.py`). Regenerate all of them with `python sample_runs/generate.py` (about a minute "
             "on one CPU core); each run's expected diagnosis is in its `expected.json`, and "
             "`tests/test_sample_runs.py` checks the engine against it.", "",
             "Labels are confirmed before they are written: the training loop measures in torch what the fault "
             "does (gradient norms per matrix, every update against its weight, the loss, validation, the "
             "exception a step raised) into `truth-<attempt>.npz` beside the tables, and `_verify.py` checks "
             "those measurements against criteria stated in its docstring, never against a runlens detector's "
             "parameters. The learning-rate samples also keep `twin-truth.npz`: the same run at the "
             "optimizer's ordinary learning rate, which must do better for the label to hold.", "",
             "| run | status | curve | must find | what happened |", "|---|---|---|---|---|"]
    for s in SAMPLES:
        exp = s.expected()
        must = ", ".join(f"`{c}`" for c in exp["must_include"]) or "-"
        lines.append(f"| `{s.spec.name}` | {s.status} | {s.curve} | {must} | {s.why} |")
    (root / "README.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="samples to regenerate (default: all)")
    parser.add_argument("--list", action="store_true", help="list the samples and exit")
    parser.add_argument("--check", action="store_true",
                        help="re-run the data checks on the recorded runs without retraining")
    parser.add_argument("--out", type=Path, default=HERE,
                        help="write the runs under this folder instead of sample_runs/ (to check the labels "
                             "without touching the committed samples)")
    parser.add_argument("--labels-only", action="store_true",
                        help="rewrite expected.json and README.md from SAMPLES without retraining")
    args = parser.parse_args(argv)
    by_name = {s.spec.name: s for s in SAMPLES}
    if args.list:
        for s in SAMPLES:
            print(f"{s.spec.name:22s} {s.why}")
        return 0
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        parser.error(f"unknown sample(s): {', '.join(unknown)}")
    if args.labels_only:
        for s in [by_name[n] for n in args.names] or SAMPLES:
            (HERE / s.spec.name / "expected.json").write_text(json.dumps(s.expected(), indent=2) + "\n")
        write_index(HERE)
        return 0
    failed = []
    for sample in [by_name[n] for n in args.names] or SAMPLES:
        if args.check:
            (ok, results), elapsed = V.run_checks(args.out / sample.spec.name, sample.checks), 0.0
        else:
            ok, results, elapsed = generate(sample, args.out)
        print(f"{'ok ' if ok else 'BAD'} {sample.spec.name:22s} {elapsed:5.1f}s  "
              + "; ".join(f"{k}={'ok' if v[0] else 'FAIL'} {v[1]}" for k, v in results.items()))
        if not ok:
            failed.append(sample.spec.name)
    if not args.check and args.out == HERE:
        write_index(HERE)
    if failed:
        print(f"the data of {', '.join(failed)} does not show what its label claims", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
