"""The held-out generator's catalog is well formed, and each task and injected crash runs for real (a few steps)."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from benchmarks.heldout import criteria  # noqa: E402
from benchmarks.heldout.catalog import CRASH_CODE, FAULTS, RUNS, fault_of  # noqa: E402
from benchmarks.heldout.tasks import TASKS, Setup  # noqa: E402
from benchmarks.heldout.train import CRASH_KINDS, Run, train  # noqa: E402

CURVES = {"healthy", "overfitting", "underfitting", "unstable", "diverged"}


def test_catalog_is_well_formed():
    names = [r.name for _, r in RUNS]
    assert len(names) == len(set(names))
    assert all(200 <= r.steps <= 6000 for _, r in RUNS)
    kinds = {k for k, _ in RUNS}
    assert {k for k in kinds if not k.startswith("crash:")} == set(FAULTS)
    assert {k.split(":")[1] for k in kinds if k.startswith("crash:")} == set(CRASH_KINDS) == set(CRASH_CODE)
    for kind, run in RUNS:
        fault = fault_of(kind)
        assert set(fault.curve_ok) <= CURVES and not set(fault.must) & set(fault.may), run.name
        assert ("crash" if kind.startswith("crash:") else kind) in criteria.CRITERIA
        assert (run.crash is not None) == kind.startswith("crash:")
    # every kind of setup the issue asks for is there
    tasks = {r.setup.task for _, r in RUNS}
    assert {"vit", "gru_lm", "vae", "infonce", "tabular"} <= tasks
    assert {"onecycle", "linear"} <= {r.schedule for _, r in RUNS}
    assert {"rmsprop", "adamw"} <= {r.optimizer for _, r in RUNS}
    assert any(r.accum > 1 for _, r in RUNS) and any(r.clip for _, r in RUNS) and any(r.bf16 for _, r in RUNS)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_each_task_trains_records_and_probes(task, tmp_path):
    run = Run(f"t-{task}", Setup(task, seed=1, width=16, depth=2), "adamw", 1e-3, steps=4, batch=8, eval_every=2,
              accum=2 if task == "vae" else 1, clip=1.0, bf16=task == "vit")
    probe, raised = train(run, tmp_path / task)
    assert raised is None
    m = probe.arrays()
    assert m["loss"].shape == (4,) and m["val_loss"].shape == (2,) and (m["update_ratio"] > 0).all()
    assert (tmp_path / task / "run.json").exists()


@pytest.mark.parametrize("kind", CRASH_KINDS)
def test_each_injected_crash_raises_a_real_torch_error(kind, tmp_path):
    kind_run = next(r for k, r in RUNS if k == f"crash:{kind}")
    run = dataclasses.replace(kind_run, name=f"c-{kind}", steps=3, crash_at=1, batch=8, eval_every=100,
                              setup=dataclasses.replace(kind_run.setup, width=16))
    probe, raised = train(run, tmp_path / kind)
    assert raised is not None and raised["step"] == 1, raised
    assert '"status": "crashed"' in (tmp_path / kind / "run.json").read_text().replace(": ", ": ")
