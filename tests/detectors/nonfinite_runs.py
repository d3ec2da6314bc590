"""Runs and a one-detector check shared by the tests of nonfinite_loss, nonfinite_gradient,
no_validation and the finding order: a healthy run from engine_runs, optionally mutated."""

from __future__ import annotations

import numpy as np
from edge_runs import make_run
from engine_runs import healthy

from runlens.analysis import run_detector
from runlens.detectors import REGISTRY, Context


def healthy_run(n=400, *, seed=0, evals=True, mutate=None):
    cols = healthy(n, 4, seed=seed)
    if mutate:
        mutate(cols)
    return make_run("r", layer_names=cols["layer_names"], scalars=cols["scalars"], layers=cols["layers"],
                    evals=cols["evals"] if evals else None)


def findings_of(code, run):
    outcome, found = run_detector(REGISTRY[code](), run, Context())
    assert outcome.state == "ran", outcome
    return found


def nan_loss_at(step, *, explode):
    def mutate(cols):
        cols["scalars"]["loss"][step:] = np.nan
        if explode:
            cols["scalars"]["grad_norm"][step - 8:step] = np.logspace(1, 4, 8)
    return mutate
