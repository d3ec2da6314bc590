"""One-shot GPU benchmark: the recorder on a GPT-2-small-sized model in bf16.

Variants, interleaved in rounds on the same model and compared by median
step time (wall clock, one ``torch.cuda.synchronize`` at the end of each
step, so every variant pays the same single wait):

- ``none``: the training step alone (forward under bf16 autocast,
  backward, AdamW step);
- ``rec1`` / ``rec10``: plus ``Recorder(layers_every=1)`` / ``(layers_every=10)``;
- ``rec1_pass``: ``rec1`` on the previous code path for ``grad_norm_applied``
  (a second pass over the gradients in the optimizer's step pre-hook);
- ``naive``: plus ``p.grad.norm().item()`` and ``p.norm().item()`` per
  parameter, a host sync per tensor, as tutorials do.

Targets (issue 14): ``rec1`` at most 1% of the step; ``rec1``'s added time at
least 10x smaller than the naive loop's. Model: 12 layers, d_model 768,
12 heads, vocabulary 50,257, sequence 512, batch 8 (about 124M parameters,
GPT-2 small's shape), built from torch alone so the script needs no
download. Usage::

    python benchmarks/gpu_overhead.py                       # on the GPU machine
    python benchmarks/gpu_overhead.py --tiny --device cpu   # a minute-long smoke run anywhere

Writes ``gpu_overhead.json`` and ``gpu_overhead.md`` to ``--out``
(default ``benchmarks/results``; ``--tiny`` runs default to a temp folder).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from recorders.torch import Recorder  # noqa: E402

VARIANTS = ("none", "rec1", "rec10", "naive", "rec1_pass")


class GPT(nn.Module):
    """A GPT-2-shaped causal language model from torch building blocks."""

    def __init__(self, vocab: int, d: int, layers: int, heads: int, seq: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        block = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        x = self.blocks(x, mask=self.mask[: ids.shape[1], : ids.shape[1]], is_causal=True)
        return self.head(self.norm(x))


def naive_loop(model: nn.Module) -> None:
    for p in model.parameters():
        if p.grad is not None:
            p.grad.norm().item()
            p.detach().norm().item()


def segment(variant: str, model: nn.Module, opt: torch.optim.Optimizer, batch: torch.Tensor, steps: int,
            device: str, tmp: Path) -> list[float]:
    rec = None
    if variant.startswith("rec"):
        every, _, option = variant[3:].partition("_")
        rec = Recorder(tmp / f"{variant}-{time.monotonic_ns()}", model, opt, layers_every=int(every),
                       handle_signals=False, compact_on_close=False, announce=False)
        if option == "pass":
            rec._math.watch.remove()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    times = []
    for _ in range(steps):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = model(batch[:, :-1])
        loss = nn.functional.cross_entropy(logits.float().flatten(0, 1), batch[:, 1:].flatten())
        loss.backward()
        opt.step()
        if rec is not None:
            rec.step(loss)
        elif variant == "naive":
            naive_loop(model)
        sync()
        times.append(time.perf_counter() - t0)
    if rec is not None:
        rec.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tiny", action="store_true", help="a small model and few steps (smoke test)")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per variant (default 200; tiny 6)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    shape = (1000, 64, 2, 2, 33, 2) if args.tiny else (50257, 768, 12, 12, 513, 8)
    vocab, d, layers, heads, seq, batch_size = shape
    steps = args.steps or (6 if args.tiny else 200)
    per_round = max(1, steps // args.rounds)
    torch.manual_seed(0)
    model = GPT(vocab, d, layers, heads, seq - 1).to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = torch.randint(0, vocab, (batch_size, seq), device=args.device)
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    order, rng = list(VARIANTS), random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        segment("none", model, opt, batch, 3, args.device, Path(tmp))  # warm-up: kernels, allocator
        for _ in range(args.rounds):
            rng.shuffle(order)
            for v in order:
                times[v] += segment(v, model, opt, batch, per_round + 2, args.device, Path(tmp))[2:]
    med = {v: statistics.median(t) for v, t in times.items()}
    added = {v: med[v] - med["none"] for v in VARIANTS}
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": args.device,
            "gpu": torch.cuda.get_device_name() if args.device == "cuda" else platform.machine(),
            "torch": torch.__version__, "tiny": args.tiny, "parameters": sum(p.numel() for p in model.parameters()),
            "tensors": sum(1 for _ in model.parameters()), "steps_per_variant": len(times["none"])}
    result = {"meta": meta, "median_step_s": med, "added_s": added,
              "rec1_pct_step": 100 * added["rec1"] / med["none"],
              "rec10_pct_step": 100 * added["rec10"] / med["none"],
              "naive_vs_rec1": added["naive"] / added["rec1"] if added["rec1"] > 0 else float("inf")}
    out = Path(args.out) if args.out else (Path(tempfile.mkdtemp()) if args.tiny
                                          else Path(__file__).parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_overhead.json").write_text(json.dumps(result, indent=1))
    (out / "gpu_overhead.md").write_text(markdown(result))
    print(markdown(result))
    print(f"written to {out}")


def markdown(r: dict) -> str:
    m = r["meta"]
    lines = ["# Recorder overhead on a GPU", "",
             f"{m['date']}, {m['gpu']} ({m['device']}), torch {m['torch']}; "
             f"{'TINY smoke model' if m['tiny'] else 'GPT-2-small-sized model'} ({m['parameters']:,} "
             f"parameters in {m['tensors']} tensors), bf16 autocast, AdamW; {m['steps_per_variant']} timed "
             "steps per variant in interleaved rounds, median wall time per step.", "",
             "| variant | step (ms) | added (ms) | % of step |", "|---|---:|---:|---:|"]
    base = r["median_step_s"]["none"]
    for v, t in r["median_step_s"].items():
        added = r["added_s"][v]
        lines.append(f"| {v} | {t * 1e3:.2f} | {added * 1e3:+.3f} | {100 * added / base:+.2f}% |")
    lines += ["", f"Targets: rec1 <= 1% of the step (measured {r['rec1_pct_step']:.2f}%); the naive loop's "
              f"added time >= 10x rec1's (measured {r['naive_vs_rec1']:.1f}x). rec10: {r['rec10_pct_step']:.2f}%."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
