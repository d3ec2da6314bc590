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


def test_a_seed_offset_keeps_every_definition_and_only_shifts_the_seeds():
    from benchmarks.heldout.catalog import runs
    from benchmarks.heldout.generate import FRESH_SEED_OFFSET, fingerprint

    fresh = runs(FRESH_SEED_OFFSET)
    assert runs(0) == RUNS and len(fresh) == len(RUNS)
    for (kind, a), (kind2, b) in zip(RUNS, fresh, strict=True):
        assert kind == kind2 and a.name == b.name
        assert b.setup.seed == a.setup.seed + FRESH_SEED_OFFSET
        assert dataclasses.replace(b, setup=a.setup) == a  # nothing else changed
        assert fingerprint(kind, a) != fingerprint(kind, b)  # a cached original is never reused
    # tasks draw with seed * 7919 + salt, salts < 1e6: the fresh draws never meet the original ones
    assert min(r.setup.seed for _, r in fresh) * 7919 > max(r.setup.seed for _, r in RUNS) * 7919 + 1_000_000


def test_the_fresh_set_has_its_own_folder_and_generate_only_grades_nothing(tmp_path, monkeypatch):
    from benchmarks._accuracy import evaluate

    calls = []
    monkeypatch.setattr("benchmarks.heldout.generate.generate",
                        lambda only=None, root=None, seed_offset=0, vary=False:
                        calls.append((root, seed_offset, vary)) or {})
    res = evaluate.heldout_set(generate=True, name="heldout-fresh", grade=False)
    assert calls == [(evaluate.FRESH_DATA, 1000, False)] and evaluate.FRESH_DATA != evaluate.HELDOUT_DATA
    assert res.name == "heldout-fresh" and res.graded == []
    res = evaluate.heldout_set(generate=True, name="heldout-varied", grade=False)
    assert calls[-1] == (evaluate.VARIED_DATA, 2000, True) and len({evaluate.VARIED_DATA, evaluate.FRESH_DATA,
                                                                     evaluate.HELDOUT_DATA}) == 3
    assert res.name == "heldout-varied" and res.graded == []
    res = evaluate.heldout_set(generate=True, name="heldout-varied2", grade=False)
    assert calls[-1] == (evaluate.VARIED2_DATA, 3000, True) and evaluate.VARIED2_DATA != evaluate.VARIED_DATA
    assert res.name == "heldout-varied2" and "never looked at" in res.role
    for dev in ("heldout", "heldout-fresh", "heldout-varied"):
        assert "development set" in evaluate.ROLES[dev]


def test_the_varied_set_redraws_lengths_widths_and_seeds_and_keeps_each_fault_in_place():
    from benchmarks.heldout.catalog import RUNS, varied

    again = varied(2000)
    assert [r.name for _, r in again] == [r.name for _, r in RUNS] and again == varied(2000)
    for (kind, base), (kind2, v) in zip(RUNS, again, strict=True):
        assert kind == kind2 and v.setup.seed == base.setup.seed + 2000
        scale = v.steps / base.steps
        assert 0.6 <= scale <= 1.8 or v.steps == 100
        assert v.change_at == base.change_at and v.optimizer == base.optimizer and v.lr == base.lr
        if base.crash_at is not None:
            assert v.crash_at / v.steps == pytest.approx(base.crash_at / base.steps, abs=0.01)
    assert len({r.steps / b.steps for (_, b), (_, r) in zip(RUNS, again, strict=True)}) > 30
