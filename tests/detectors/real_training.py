"""What the real-run gradient tests share: train a scenario through the public recorder,
analyze it back from disk, and read the warning-or-worse codes of a family of detectors."""

from __future__ import annotations

import torch

from recorders.torch import Recorder
from runlens.analysis import analyze


def train(path, model, opt, steps, loss_fn, seed=0, *, stop_on_nonfinite=False):
    """``steps`` optimizer steps of ``loss_fn(model, generator)``, recorded into ``path``."""
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    with Recorder(path, model, opt, config={"test": path.name}, seed=seed, handle_signals=False) as rec:
        for _ in range(steps):
            opt.zero_grad()
            loss = loss_fn(model, g)
            loss.backward()
            opt.step()
            rec.step(loss)
            if stop_on_nonfinite and not torch.isfinite(loss):
                break
    return path


def diagnose_scenarios(root, scenarios, **train_kw):
    """``{name: analysis}`` of every scenario (``make() -> (model, opt, steps, loss_fn)``), one thread."""
    torch.set_num_threads(1)
    out = {}
    for name, make in scenarios.items():
        torch.manual_seed(0)
        model, opt, steps, loss_fn = make()
        out[name] = analyze(train(root / name, model, opt, steps, loss_fn, **train_kw))
    return out


def warning_codes(diag, ours) -> set[str]:
    """The codes among ``ours`` that ``diag`` reports at warning or error."""
    return {f.code for f in diag.findings if f.code in ours and f.severity in ("warning", "error")}
