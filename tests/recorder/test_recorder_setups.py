"""Recorder statistics under each training setup, against references computed here, by hand.

Every reference is the textbook computation on a twin model trained
identically (or on the same step's gradients): the unscaled, pre-clip,
accumulated gradient, the learning rate each param group used.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from recorder_testutil import meta, parts, read_table
from torch import nn

from recorders import _torch_step
from recorders.torch import Recorder

torch.set_num_threads(1)


def make(seed: int = 0, width: int = 32) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, width), nn.Tanh(), nn.Linear(width, 1))


def data(n: int, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(16, 6, generator=gen), torch.randn(16, 1, generator=gen)) for _ in range(n)]


def train(rec: Recorder, model: nn.Module, opt: torch.optim.Optimizer, n: int) -> None:
    """The plain loop: one optimizer step on each of ``data(n)``, each recorded."""
    for x, y in data(n):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        rec.step(loss)


def layer_rows(run_dir) -> dict[tuple[int, str], dict]:
    return {(r["step"], r["layer"]): r for r in read_table(run_dir, "layers").to_pylist()}


def grad_norms(model: nn.Module) -> dict[str, float]:
    return {n: p.grad.double().norm().item() for n, p in model.named_parameters() if p.grad is not None}


def total(norms: dict[str, float]) -> float:
    return float(np.sqrt(sum(v * v for v in norms.values())))


@pytest.fixture
def captures(monkeypatch):
    """Counts StepMath.capture calls: the passes over the gradients."""
    calls = []
    real = _torch_step.StepMath.capture

    def counted(self, *a, **k):
        calls.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(_torch_step.StepMath, "capture", counted)
    return calls


def test_fp16_gradscaler_on_cpu_unscaled_norms_and_real_skips(tmp_path, check_runlog):
    """fp16 autocast with a scale so high that the first steps overflow and are skipped."""
    model, twin = make(), make()
    opt, topt = torch.optim.SGD(model.parameters(), lr=0.05), torch.optim.SGD(twin.parameters(), lr=0.05)
    scaler, tscaler = (torch.amp.GradScaler("cpu", init_scale=2.0 ** 24, growth_interval=3) for _ in range(2))
    ref = []
    with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
        for x, y in data(10):
            for m, o, sc in ((model, opt, scaler), (twin, topt, tscaler)):
                o.zero_grad()
                with torch.autocast("cpu", dtype=torch.float16):
                    loss = nn.functional.mse_loss(m(x).float(), y)
                used = sc.get_scale()
                sc.scale(loss).backward()
                if m is twin:  # the reference: unscale by hand, then read the gradients
                    sc.unscale_(o)
                    norms = grad_norms(twin)
                    ref.append((used, int(not np.isfinite(total(norms))), norms))
                sc.step(o)
                sc.update()
            rec.step(loss, scaler=scaler)
    check_runlog(tmp_path / "r")
    s = read_table(tmp_path / "r", "scalars").to_pydict()
    assert s["loss_scale"] == [u for u, _, _ in ref]
    assert s["step_skipped"] == [k for _, k, _ in ref]
    assert 1 <= sum(s["step_skipped"]) < len(ref)  # real overflows, and real steps too
    rows = layer_rows(tmp_path / "r")
    for step, (_, skipped, norms) in enumerate(ref):
        if skipped:
            continue
        assert s["grad_norm"][step] == pytest.approx(total(norms), rel=1e-5)
        for name, value in norms.items():
            assert rows[(step, name)]["grad_norm"] == pytest.approx(value, rel=1e-5)
    events = read_table(tmp_path / "r", "events")
    kinds = [] if events is None else events.column("kind").to_pylist()
    assert "nonfinite_grad" not in kinds  # an overflow the scaler skipped is normal, not divergence


def test_gradients_set_by_hand_under_a_scaler_are_unscaled_once(tmp_path, check_runlog):
    """No backward hook fires (torch.autograd.grad): the recorder reads .grad after
    GradScaler.step unscaled it in place, and must not divide by the scale again."""
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=1000)
    expected = []
    with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
        for x, y in data(3):
            loss = nn.functional.mse_loss(model(x), y)
            grads = torch.autograd.grad(scaler.scale(loss), list(model.parameters()))
            expected.append(float(torch.stack([g.double().norm() for g in grads]).norm()) / 2.0 ** 8)
            for p, g in zip(model.parameters(), grads, strict=True):
                p.grad = g
            scaler.step(opt)
            scaler.update()
            rec.step(loss, scaler=scaler)
    check_runlog(tmp_path / "r")
    assert read_table(tmp_path / "r", "scalars").column("grad_norm").to_pylist() == pytest.approx(expected,
                                                                                                  rel=1e-5)


def test_bf16_autocast_matches_the_gradients_read_by_hand(tmp_path, check_runlog):
    model, twin = make(), make()
    opt, topt = torch.optim.Adam(model.parameters(), lr=1e-2), torch.optim.Adam(twin.parameters(), lr=1e-2)
    ref = []
    with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
        for x, y in data(4):
            for m, o in ((model, opt), (twin, topt)):
                o.zero_grad()
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = nn.functional.mse_loss(m(x).float(), y)
                loss.backward()
                if m is twin:
                    ref.append(grad_norms(twin))
                o.step()
            rec.step(loss)
    check_runlog(tmp_path / "r")
    s = read_table(tmp_path / "r", "scalars").column("grad_norm").to_pylist()
    rows = layer_rows(tmp_path / "r")
    for step, norms in enumerate(ref):
        assert s[step] == pytest.approx(total(norms), rel=1e-5)
        for name, value in norms.items():
            assert rows[(step, name)]["grad_norm"] == pytest.approx(value, rel=1e-5)


@pytest.mark.parametrize("k,hint", [(1, False), (4, False), (4, True), (8, True)])
def test_accumulation_reads_the_gradients_once_per_optimizer_step(tmp_path, check_runlog, captures, k, hint):
    model, twin = make(), make()
    opt, topt = torch.optim.SGD(model.parameters(), lr=0.05), torch.optim.SGD(twin.parameters(), lr=0.05)
    steps, ref = 4, []
    batches = data(steps * k)
    with Recorder(tmp_path / "r", model, opt, accumulation_steps=k if hint else None,
                  handle_signals=False) as rec:
        for step in range(steps):
            micro = batches[step * k:(step + 1) * k]
            if step == steps - 1:
                micro = micro[: max(1, k - 1)]  # a short last accumulation (the end of an epoch)
            for m, o in ((model, opt), (twin, topt)):
                o.zero_grad()
                for x, y in micro:
                    (nn.functional.mse_loss(m(x), y) / k).backward()
                if m is twin:
                    ref.append(grad_norms(twin))
                o.step()
            rec.step(torch.tensor(0.0))
    check_runlog(tmp_path / "r")
    # One pass per optimizer step; without the hint the first step cannot know K yet.
    assert len(captures) == steps + (0 if hint or k == 1 else k - 1)
    rows = layer_rows(tmp_path / "r")
    for step, norms in enumerate(ref):
        for name, value in norms.items():
            assert rows[(step, name)]["grad_norm"] == pytest.approx(value, rel=1e-5), (step, name)


def test_clip_grad_norm_total_is_used_and_spares_the_pass(tmp_path, check_runlog, captures):
    model, twin = make(), make()
    opt, topt = torch.optim.SGD(model.parameters(), lr=0.05), torch.optim.SGD(twin.parameters(), lr=0.05)
    totals, ref = [], {}
    with Recorder(tmp_path / "r", model, opt, layers_every=5, handle_signals=False) as rec:
        for step, (x, y) in enumerate(data(12)):
            for m, o in ((model, opt), (twin, topt)):
                o.zero_grad()
                nn.functional.mse_loss(m(x), y).backward()
                if m is twin:
                    ref[step] = grad_norms(twin)
                norm = torch.nn.utils.clip_grad_norm_(m.parameters(), max_norm=0.01)
                o.step()
            totals.append(norm.item())
            rec.step(torch.tensor(1.0), grad_norm=norm)
    check_runlog(tmp_path / "r")
    assert read_table(tmp_path / "r", "scalars").column("grad_norm").to_pylist() == pytest.approx(totals)
    assert len(captures) == 3  # layer steps 0, 5, 10 only: the loop's own norm serves the rest
    rows = layer_rows(tmp_path / "r")
    for step in (0, 5, 10):
        assert total(ref[step]) > 0.05  # so the clip to 0.01 really changed the gradients
        for name, value in ref[step].items():
            assert rows[(step, name)]["grad_norm"] == pytest.approx(value, rel=1e-5)  # before clipping


@pytest.mark.parametrize("scheduler_first", [False, True])
def test_every_param_group_lr_is_the_one_the_step_used(tmp_path, check_runlog, scheduler_first):
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 1))
    groups = [{"params": model[i].parameters(), "lr": lr} for i, lr in ((0, 0.1), (2, 0.01), (4, 0.001))]
    opt = torch.optim.SGD(groups, lr=0.5)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 ** s)
    used = []
    with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
        for x, y in data(4):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            used.append([g["lr"] for g in opt.param_groups])
            opt.step()
            if scheduler_first:
                sched.step()
            rec.step(loss)
            if not scheduler_first:
                sched.step()
    check_runlog(tmp_path / "r")
    s = read_table(tmp_path / "r", "scalars").to_pydict()
    assert s["lr"] == pytest.approx([u[0] for u in used])
    assert s["lr_group1"] == pytest.approx([u[1] for u in used])
    assert s["lr_group2"] == pytest.approx([u[2] for u in used])
    assert used[1][0] == pytest.approx(0.05)  # the schedule really moved


def test_tensor_lr_is_recorded_without_item(tmp_path, check_runlog, monkeypatch):
    model = make()
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    real_item = torch.Tensor.item
    with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
        for x, y in data(3):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            sched.step()  # fills the tensor lr in place: the recorder must have copied the old value

            def no_item(self):
                raise AssertionError("Tensor.item() called inside rec.step: a host sync of its own")

            monkeypatch.setattr(torch.Tensor, "item", no_item)
            rec.step(loss)
            monkeypatch.setattr(torch.Tensor, "item", real_item)
    check_runlog(tmp_path / "r")
    assert not rec.warnings
    assert read_table(tmp_path / "r", "scalars").column("lr").to_pylist() == pytest.approx([0.01, 0.005, 0.0025])


def test_frozen_parameters_are_listed_with_their_weight_norms(tmp_path, check_runlog):
    model = make()
    for p in model[0].parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
        train(rec, model, opt, 3)
    check_runlog(tmp_path / "r")
    layers = {x["name"]: x for x in meta(tmp_path / "r")["layers"]}
    assert {n: x["trainable"] for n, x in layers.items()} == {
        "0.weight": False, "0.bias": False, "2.weight": True, "2.bias": True}
    rows = layer_rows(tmp_path / "r")
    for step in range(3):
        frozen = rows[(step, "0.weight")]
        assert frozen["grad_norm"] is None and frozen["update_norm"] == 0.0
        assert frozen["weight_norm"] == pytest.approx(model[0].weight.norm().item(), rel=1e-6)
        assert rows[(step, "2.weight")]["grad_norm"] > 0


def test_summary_counts_what_is_on_disk_and_close_says_where(tmp_path, check_runlog, capsys):
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rec = Recorder(tmp_path / "r", model, opt, flush_every=4, handle_signals=False)
    train(rec, model, opt, 10)
    assert rec.writer.flush()
    info = rec.summary()
    files = [p for t in ("scalars", "layers", "events", "evals") for _, _, p in parts(tmp_path / "r", t)]
    assert info["steps"] == 10 and info["last_step"] == 9 and info["unwritten_steps"] == 0
    assert info["parts"] == len(files) and info["bytes"] == sum(p.stat().st_size for p in files)
    assert info["last_flush"] is not None
    rec.close()
    check_runlog(tmp_path / "r")
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("runlens:")]
    assert lines == [f"runlens: finished run written to {tmp_path / 'r'} (10 steps, {info['parts']} part(s), "
                     f"{info['bytes'] / 1e6:.1f} MB this attempt)"]


def test_steps_that_read_no_gradients_ride_in_the_next_steps_one_transfer(tmp_path, check_runlog,
                                                                         monkeypatch):
    transfers = []
    real = _torch_step._Batch.to_host

    def counted(self, *a, **k):
        transfers.append(len(self.pieces))
        return real(self, *a, **k)

    monkeypatch.setattr(_torch_step._Batch, "to_host", counted)
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    with Recorder(tmp_path / "r", model, opt, layers_every=5, grad_norm_every=5, handle_signals=False) as rec:
        for step, (x, y) in enumerate(data(10)):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            shown = loss.detach() * (float("nan") if step == 7 else 1.0)  # a NaN loss on a deferred step
            losses.append(shown.item())
            rec.step(shown, acc=torch.tensor(step / 10))
    check_runlog(tmp_path / "r")
    assert len(transfers) == 3  # steps 0 and 5 (carrying 1-4), and close (carrying 6-9)
    s = read_table(tmp_path / "r", "scalars").to_pydict()
    assert s["step"] == list(range(10))
    assert np.allclose(s["loss"], losses, equal_nan=True) and s["acc"] == pytest.approx([i / 10 for i in range(10)])
    assert [g is not None for g in s["grad_norm"]] == [i % 5 == 0 for i in range(10)]
    events = read_table(tmp_path / "r", "events").to_pylist()
    assert [(e["step"], e["kind"]) for e in events] == [(7, "nonfinite_loss")]
