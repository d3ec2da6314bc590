"""The events the torch recorder raises for one recorded step."""

from __future__ import annotations

from typing import Any

import numpy as np


def step_events(writer: Any, s: int, res: Any, *, watch: Any, spikes: Any, depth: np.ndarray,
                names: tuple[str, ...]) -> None:
    """The events of one recorded step (see docs/recorder.md, Events)."""
    culprit = watch.first_nonfinite() if watch and res.anomalous else None
    if watch and not res.anomalous:
        watch.clear()
    where = f"; first non-finite activation: output of {culprit!r}" if culprit else ""
    if not np.isfinite(res.loss):
        writer.add_event(s, "nonfinite_loss", f"loss is {res.loss}{where}", value=res.loss,
                               layer=culprit)
    bad = res.nonfinite_params
    if len(bad) and not res.step_skipped:
        closest = bad[np.argmax(depth[bad])]
        name = names[closest]
        writer.add_event(s, "nonfinite_grad",
                               f"{len(bad)} parameter(s) had non-finite gradients; closest to the "
                               f"loss: {name}{where}", layer=name, value=float(len(bad)))
    elif res.grad_norm is not None and not np.isfinite(res.grad_norm) and not res.step_skipped:
        writer.add_event(s, "nonfinite_grad", f"the total gradient norm is {res.grad_norm} "
                               f"(gradients not read this step, so no layer named){where}")
    if res.grad_norm is not None:
        z = spikes.update(res.grad_norm)
        if z is not None:
            writer.add_event(s, "grad_norm_spike",
                                   f"grad norm {res.grad_norm:.4g} is {z:.1f} robust SDs above "
                                   f"the last {len(spikes)} steps", value=res.grad_norm)
