"""Recorder numbers against reference computations, in-process."""

from __future__ import annotations

import gc
import tracemalloc
import weakref

import numpy as np
import psutil
import pyarrow as pa
import pytest
import torch
from recorder_testutil import meta, read_table
from torch import nn

from recorders.format import FIELDS
from recorders.torch import Recorder

torch.set_num_threads(1)


def mlp(seed: int = 0, dead: bool = True) -> nn.Sequential:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 1))
    if dead:
        with torch.no_grad():
            model[0].bias[:5] = -50.0  # dead ReLUs: exact zeros in the gradients
    return model


def layer_rows(run_dir) -> dict[tuple[int, str], dict]:
    return {(r["step"], r["layer"]): r for r in read_table(run_dir, "layers").to_pylist()}


def reference_stats(grads: dict[str, torch.Tensor]) -> dict[str, dict[str, float]]:
    return {n: {"grad_norm": g.norm().item(), "grad_abs_max": g.abs().max().item(),
                "grad_zero_frac": (g == 0).float().mean().item()} for n, g in grads.items()}


def test_accumulated_gradients_before_clipping_match_a_reference(tmp_path, check_runlog):
    model, twin = mlp(), mlp()
    opt, topt = (torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, twin))
    gen = torch.Generator().manual_seed(3)
    batches = [(torch.randn(8, 6, generator=gen), torch.randn(8, 1, generator=gen)) for _ in range(12)]
    expected = {}
    with Recorder(tmp_path / "r", model, opt, exact_zero_frac=True, handle_signals=False) as rec:
        for step in range(3):
            micro = batches[4 * step: 4 * step + 4]
            opt.zero_grad()
            for x, y in micro:  # gradient accumulation over 4 micro-batches
                (nn.functional.mse_loss(model(x), y) / 4).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.01)  # always clips
            opt.step()
            rec.step(torch.tensor(1.0))
            # reference on the twin
            topt.zero_grad()
            for x, y in micro:
                (nn.functional.mse_loss(twin(x), y) / 4).backward()
            before = {n: p.detach().clone() for n, p in twin.named_parameters()}
            ref = reference_stats({n: p.grad.clone() for n, p in twin.named_parameters()})
            total = float(np.sqrt(sum(v["grad_norm"] ** 2 for v in ref.values())))
            torch.nn.utils.clip_grad_norm_(twin.parameters(), max_norm=0.01)
            topt.step()
            for n, p in twin.named_parameters():
                ref[n]["update_norm"] = (p.detach() - before[n]).norm().item()
                ref[n]["weight_norm"] = p.detach().norm().item()
            expected[step] = (total, ref)
    check_runlog(tmp_path / "r")
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        assert torch.equal(p, q)  # the recorder changed neither gradients nor weights
    rows = layer_rows(tmp_path / "r")
    scalars = read_table(tmp_path / "r", "scalars").column("grad_norm").to_pylist()
    for step, (total, ref) in expected.items():
        assert scalars[step] == pytest.approx(total, rel=1e-5)
        assert total > 0.05  # so clipping to 0.01 really changed the gradients
        for name, cols in ref.items():
            for col, value in cols.items():
                assert rows[(step, name)][col] == pytest.approx(value, rel=1e-4, abs=1e-7), (step, name, col)
            assert rows[(step, name)]["nonfinite"] == 0
    assert rows[(0, "0.weight")]["grad_zero_frac"] == pytest.approx(5 / 16)


def test_sampled_update_and_zero_fraction_estimates_are_close(tmp_path, check_runlog):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(32, 256), torch.randn(32, 1)
    exact = []
    with Recorder(tmp_path / "r", model, opt, sample_size=4096, handle_signals=False) as rec:
        for _ in range(5):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            before = model[0].weight.detach().clone()
            zero = (model[0].weight.grad == 0).float().mean().item()
            opt.step()
            exact.append(((model[0].weight.detach() - before).norm().item(), zero))
            rec.step(torch.tensor(0.0))
    check_runlog(tmp_path / "r")
    rows = layer_rows(tmp_path / "r")
    for step, (update, zero) in enumerate(exact):
        row = rows[(step, "0.weight")]  # 65,536 elements: estimated from 4,096
        assert row["update_norm"] == pytest.approx(update, rel=0.05)
        assert row["grad_zero_frac"] == pytest.approx(zero, abs=0.05)  # 1,024-element sample


class Reversed(nn.Module):
    """Registered head-first, called input-first; attention's out_proj is never called."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(4, 2)
        self.body = nn.Linear(8, 4)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        x, _ = self.attn(x, x, x)
        return self.head(torch.relu(self.body(x)))


def test_layers_are_in_depth_order_of_first_use(tmp_path, check_runlog):
    model = Reversed()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
        assert [x["name"] for x in meta(tmp_path / "r")["layers"]][0] == "head.weight"  # before forward
        loss = model(torch.randn(2, 3, 8)).pow(2).mean()
        loss.backward()
        opt.step()
        rec.step(loss)
    check_runlog(tmp_path / "r")
    layers = meta(tmp_path / "r")["layers"]
    assert [x["name"] for x in layers] == [
        "attn.in_proj_weight", "attn.in_proj_bias", "attn.out_proj.weight", "attn.out_proj.bias",
        "body.weight", "body.bias", "head.weight", "head.bias"]
    assert [x["index"] for x in layers] == list(range(8))
    assert layers[0]["kind"] == "MultiheadAttention" and layers[0]["module"] == "attn"
    assert layers[2]["module"] == "attn.out_proj" and layers[2]["kind"] == "NonDynamicallyQuantizableLinear"
    assert layers[4] == {"name": "body.weight", "index": 4, "module": "body", "kind": "Linear",
                         "shape": [4, 8], "numel": 32, "trainable": True}


def test_amp_scaler_columns_and_skipped_steps(tmp_path, check_runlog):
    model, twin = mlp(dead=False), mlp(dead=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
    x, y = torch.randn(16, 6), torch.randn(16, 1)
    used, skipped = [], []
    with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
        for step in range(6):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = nn.functional.mse_loss(model(x).float(), y)
            if step == 3:
                loss = loss * float("inf")
            scale = scaler.get_scale()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            used.append(scale)
            skipped.append(int(scaler.get_scale() < scale))
            rec.step(loss, scaler=scaler)
    check_runlog(tmp_path / "r")
    t = read_table(tmp_path / "r", "scalars")
    assert t.schema.field("loss_scale").type == pa.float64()
    assert t.column("loss_scale").to_pylist() == used
    assert t.column("step_skipped").to_pylist() == skipped == [0, 0, 0, 1, 0, 0]
    kinds = [(e["step"], e["kind"]) for e in read_table(tmp_path / "r", "events").to_pylist()]
    assert (3, "nonfinite_loss") in kinds and (3, "nonfinite_grad") not in kinds  # skipped: normal
    # Recorded gradient norms are unscaled: compare step 0 with the same step without a scaler.
    with torch.autocast("cpu", dtype=torch.bfloat16):
        nn.functional.mse_loss(twin(x).float(), y).backward()
    rows = layer_rows(tmp_path / "r")
    for name, p in twin.named_parameters():
        assert rows[(0, name)]["grad_norm"] == pytest.approx(p.grad.norm().item(), rel=1e-3)


def _train(model, opt, x, y, steps, rec=None):
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if rec is not None:
            rec.step(loss)


def test_training_and_rng_state_are_untouched(tmp_path, check_runlog):
    def make():
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(6, 32), nn.Dropout(0.3), nn.ReLU(), nn.Linear(32, 1))
        return m, torch.optim.Adam(m.parameters(), lr=1e-2)

    x, y = torch.randn(16, 6), torch.randn(16, 1)
    a, aopt = make()
    _train(a, aopt, x, y, 20)
    state_plain = torch.get_rng_state()
    b, bopt = make()
    with Recorder(tmp_path / "r", b, bopt, watch_activations=True, handle_signals=False) as rec:
        _train(b, bopt, x, y, 20, rec)
    check_runlog(tmp_path / "r")
    assert torch.equal(torch.get_rng_state(), state_plain)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)


class NaNAt(nn.Module):
    """Identity whose gradient turns NaN on one step: NaN enters backprop here."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    def forward(self, x):
        if self.armed and x.requires_grad:
            x.register_hook(lambda g: g * float("nan"))
        return x


def test_nonfinite_grad_names_the_entry_point_even_after_clipping(tmp_path, check_runlog):
    torch.manual_seed(0)
    trap = NaNAt()
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), trap, nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
        for step in range(3):
            trap.armed = step == 2
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # spreads NaN to every gradient
            opt.step()
            rec.step(loss)
    check_runlog(tmp_path / "r")
    events = [e for e in read_table(tmp_path / "r", "events").to_pylist() if e["kind"] == "nonfinite_grad"]
    assert [(e["step"], e["layer"], e["value"]) for e in events] == [(2, "2.bias", 4.0)]
    rows = layer_rows(tmp_path / "r")
    assert np.isfinite(rows[(2, "5.weight")]["grad_norm"])  # before clipping, the head was fine
    assert rows[(2, "5.weight")]["nonfinite"] == 0
    assert rows[(2, "2.weight")]["nonfinite"] == 64


class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)


def test_watch_activations_names_the_first_nonfinite_module(tmp_path, check_runlog):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), Log(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    with Recorder(tmp_path / "r", model, opt, watch_activations=True, handle_signals=False) as rec:
        loss = model(torch.randn(8, 4)).mean()
        loss.backward()
        opt.step()
        rec.step(loss)
    check_runlog(tmp_path / "r")
    (event,) = [e for e in read_table(tmp_path / "r", "events").to_pylist() if e["kind"] == "nonfinite_loss"]
    assert event["layer"] == "1" and "output of '1'" in event["message"]


def test_grad_norm_spike_is_flagged_once(tmp_path, check_runlog):
    model = mlp(dead=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
        for step in range(60):
            x, y = torch.randn(16, 6, generator=gen), torch.randn(16, 1, generator=gen)  # natural noise
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y) * (1000.0 if step == 45 else 1.0)
            loss.backward()
            if step != 45:  # the spike must not derail the following steps
                opt.step()
            rec.step(loss)
    check_runlog(tmp_path / "r")
    spikes = [e["step"] for e in read_table(tmp_path / "r", "events").to_pylist()
              if e["kind"] == "grad_norm_spike"]
    assert spikes == [45]


def test_missing_gradients_and_no_optimizer_give_typed_nulls(tmp_path, check_runlog):
    model = nn.ModuleDict({"used": nn.Linear(3, 1), "unused": nn.Linear(3, 1)})
    with Recorder(tmp_path / "r", model, None, handle_signals=False) as rec:
        rec.step(1.0)  # no backward at all: no gradients
        model["used"](torch.randn(2, 3)).sum().backward()
        rec.step(torch.tensor(0.5), accuracy=torch.tensor(0.25))
    check_runlog(tmp_path / "r")
    t = read_table(tmp_path / "r", "scalars")
    assert "lr" not in t.column_names
    assert t.column("grad_norm").to_pylist()[0] is None and t.column("accuracy").to_pylist()[1] == 0.25
    rows = layer_rows(tmp_path / "r")
    assert rows[(1, "unused.weight")]["grad_norm"] is None
    assert rows[(1, "used.weight")]["grad_norm"] > 0
    assert rows[(1, "unused.weight")]["update_norm"] == 0.0
    layers_schema = read_table(tmp_path / "r", "layers").schema
    assert layers_schema.field("grad_norm").type == FIELDS["layers"]["grad_norm"]


def test_layers_every_records_layers_on_multiples_only(tmp_path, check_runlog):
    model = mlp(dead=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    with Recorder(tmp_path / "r", model, opt, layers_every=10, handle_signals=False) as rec:
        _train(model, opt, torch.randn(4, 6), torch.randn(4, 1), 25, rec)
    check_runlog(tmp_path / "r")
    assert sorted({r["step"] for r in read_table(tmp_path / "r", "layers").to_pylist()}) == [0, 10, 20]
    assert len(read_table(tmp_path / "r", "scalars")) == 25
    assert meta(tmp_path / "r")["config"]["layers_every"] == 10


def test_no_graph_is_kept_and_memory_stays_flat(tmp_path, check_runlog):
    model = mlp(dead=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x, y = torch.randn(4, 6), torch.randn(4, 1)
    with Recorder(tmp_path / "r", model, opt, flush_every=100, handle_signals=False) as rec:
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        ref = weakref.ref(loss)
        rec.step(loss)
        del loss
        gc.collect()
        assert ref() is None  # the recorder holds no reference to the autograd graph
        _train(model, opt, x, y, 300, rec)
        rss_early = psutil.Process().memory_info().rss
        tracemalloc.start()
        _train(model, opt, x, y, 500, rec)
        gc.collect()
        early, _ = tracemalloc.get_traced_memory()
        _train(model, opt, x, y, 1500, rec)
        gc.collect()
        late, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss_late = psutil.Process().memory_info().rss
    check_runlog(tmp_path / "r")
    # Python objects: flat to within a few buffered rows; process memory: generous bound.
    assert late - early < 150_000, f"Python memory grew by {late - early} bytes over 1500 steps"
    assert rss_late - rss_early < 30_000_000


def test_deleted_run_directory_does_not_stop_training(tmp_path, check_runlog):
    import shutil

    model = mlp(dead=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(4, 6), torch.randn(4, 1)
    with Recorder(tmp_path / "r", model, opt, flush_every=5, handle_signals=False) as rec:
        _train(model, opt, x, y, 7, rec)
        rec.writer.flush()  # the writer thread is idle: rmtree does not race its renames
        shutil.rmtree(tmp_path / "r")
        _train(model, opt, x, y, 13, rec)
    check_runlog(tmp_path / "r")  # recreated by the next flush, metadata and all
    assert meta(tmp_path / "r")["status"] == "finished"
    assert read_table(tmp_path / "r", "scalars").column("step").to_pylist()[-1] == 19


def test_exception_in_with_is_recorded_and_propagates(tmp_path, check_runlog):
    model = mlp(dead=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    class Boom(Exception):
        pass

    with pytest.raises(Boom, match="bad batch"):
        with Recorder(tmp_path / "r", model, opt, handle_signals=False) as rec:
            _train(model, opt, torch.randn(4, 6), torch.randn(4, 1), 3, rec)
            raise Boom("bad batch")
    check_runlog(tmp_path / "r")
    error = meta(tmp_path / "r")["error"]
    assert error["type"].endswith(".Boom") and error["step"] == 3


def test_step_after_close_is_ignored_with_a_warning(tmp_path, check_runlog):
    model = mlp(dead=False)
    rec = Recorder(tmp_path / "a", model, None, handle_signals=False)
    rec.close()
    with pytest.warns(RuntimeWarning, match="after close"):
        rec.step(1.0)
    check_runlog(tmp_path / "a")
    assert read_table(tmp_path / "a", "scalars") is None


def test_grad_norm_every_skips_gradient_work_between_recorded_steps(tmp_path, check_runlog):
    model = mlp(dead=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=1000)
    x, y = torch.randn(4, 6), torch.randn(4, 1)
    with Recorder(tmp_path / "r", model, opt, layers_every=4, grad_norm_every=2,
                  handle_signals=False) as rec:
        for step in range(9):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y) * (float("inf") if step == 5 else 1.0)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            rec.step(loss, scaler=scaler)
    check_runlog(tmp_path / "r")
    t = read_table(tmp_path / "r", "scalars")
    norms = t.column("grad_norm").to_pylist()
    assert [n is not None for n in norms] == [True, False] * 4 + [True]
    assert t.column("step_skipped").to_pylist() == [0, 0, 0, 0, 0, 1, 0, 0, 0]  # step 5: seen without grads
    assert t.column("loss_scale").to_pylist() == [256.0] * 6 + [128.0] * 3
    assert sorted({r["step"] for r in read_table(tmp_path / "r", "layers").to_pylist()}) == [0, 4, 8]


def test_grad_abs_max_can_be_left_out_and_bad_parameters_are_refused(tmp_path, check_runlog):
    model = mlp(dead=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    with Recorder(tmp_path / "r", model, opt, grad_abs_max=False, handle_signals=False) as rec:
        _train(model, opt, torch.randn(4, 6), torch.randn(4, 1), 2, rec)
    check_runlog(tmp_path / "r")
    layers = read_table(tmp_path / "r", "layers")
    assert layers.column("grad_abs_max").null_count == layers.num_rows
    assert layers.schema.field("grad_abs_max").type == pa.float32()
    with pytest.raises(ValueError, match="'layers_every' parameter of Recorder must be an int >= 1. Got 0"):
        Recorder(tmp_path / "x", model, opt, layers_every=0, handle_signals=False)
