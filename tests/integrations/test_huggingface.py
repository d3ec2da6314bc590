"""recorders.huggingface.RunlensCallback with a real transformers.Trainer (tiny GPT-2 built from a
config, no download), and the hf importer on the trainer_state.json and console output of that run."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")  # the Trainer needs it

from recorders.huggingface import RunlensCallback  # noqa: E402
from runlens.io.importers import detect_kind, import_run  # noqa: E402

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]

TINY = textwrap.dedent("""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    def tiny_gpt2():
        torch.manual_seed(0)
        cfg = GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64, n_positions=16,
                         bos_token_id=0, eos_token_id=0)
        return GPT2LMHeadModel(cfg)

    def token_data(n=32):
        g = torch.Generator().manual_seed(0)
        rows = []
        for _ in range(n):
            ids = torch.randint(0, 64, (16,), generator=g)
            rows.append({"input_ids": ids, "labels": ids})
        return rows
""")
exec(TINY)  # the same helpers run in-process and in the crash subprocess below


def table(run: Path, name: str):
    parts = sorted((run / name).glob("r*.parquet"))
    return pq.read_table(parts) if parts else None


def meta(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())


def args(tmp_path: Path, **kw):
    opts = dict(output_dir=str(tmp_path / "out"), max_steps=8, per_device_train_batch_size=4,
                logging_steps=2, eval_strategy="steps", eval_steps=4, report_to=[], use_cpu=True,
                save_strategy="steps", save_steps=8, max_grad_norm=0.01, disable_tqdm=True,
                learning_rate=1e-3, gradient_accumulation_steps=2, seed=7)
    opts.update(kw)
    return transformers.TrainingArguments(**opts)


def test_trainer_run_matches_the_trainers_own_logs(tmp_path, capsys, check_runlog):
    run = tmp_path / "run"
    data = token_data()  # noqa: F821 - defined by exec(TINY)
    trainer = transformers.Trainer(model=tiny_gpt2(), args=args(tmp_path), train_dataset=data,  # noqa: F821
                                   eval_dataset=data[:8], callbacks=[RunlensCallback(run)])
    trainer.train()
    console = capsys.readouterr().out
    check_runlog(run)
    m = meta(run)
    assert m["status"] == "finished" and m["seed"] == 7
    assert m["config"]["training_args"]["max_grad_norm"] == 0.01
    assert m["config"]["trainer_state"]["global_step"] == 8
    assert m["config"]["loss_source"] == "model outputs"
    s = table(run, "scalars").to_pydict()
    assert s["step"] == list(range(8))
    logs = [e for e in trainer.state.log_history if "loss" in e and "train_runtime" not in e]
    for entry in logs:  # the Trainer logs the mean loss of the last logging_steps steps at step N
        i = entry["step"] - 1
        assert entry["loss"] == pytest.approx((s["loss"][i] + s["loss"][i - 1]) / 2, abs=6e-4)
        assert entry["grad_norm"] == pytest.approx(s["grad_norm"][i], rel=1e-5)  # pre-clip, like ours
        assert entry["learning_rate"] == pytest.approx(s["lr"][i], rel=1e-6)
    assert min(s["grad_norm"]) > 0.1  # clipping to 0.01 came later
    layers = table(run, "layers")
    assert set(layers.column("layer").to_pylist()) == {n for n, p in trainer.model.named_parameters()
                                                       if p.requires_grad}
    e = table(run, "evals").to_pydict()
    evals = [x for x in trainer.state.log_history if "eval_loss" in x]
    assert e["step"] == [x["step"] - 1 for x in evals] == [3, 7]
    assert e["val_loss"] == pytest.approx([x["eval_loss"] for x in evals])

    state = tmp_path / "out" / "checkpoint-8" / "trainer_state.json"
    assert detect_kind(tmp_path / "out") == "table"  # the structure-first reader (issue 19)
    imported = import_run("hf", tmp_path / "out", tmp_path / "imported")
    check_runlog(imported)
    si = table(imported, "scalars").to_pydict()
    # The importer keeps the file's own steps (global_step N); the callback records N as step N - 1.
    assert si["step"] == [2, 4, 6, 8]
    assert si["grad_norm"] == pytest.approx([s["grad_norm"][i - 1] for i in si["step"]])
    assert table(imported, "evals").to_pydict()["val_loss"] == pytest.approx(e["val_loss"])
    assert meta(imported)["config"]["imported_from"]["path"] == str(state)

    log = tmp_path / "train.out"
    log.write_text(console)
    assert detect_kind(log) == "hf"
    from_console = import_run("hf", log, tmp_path / "console", logging_steps=2)
    check_runlog(from_console)
    sc = table(from_console, "scalars").to_pydict()
    assert sc["step"] == si["step"]
    assert sc["loss"] == pytest.approx(si["loss"], rel=1e-3)  # printed with 4 significant digits
    printed = [ast.literal_eval(x) for x in console.splitlines() if x.startswith("{'eval_loss'")]
    assert len(printed) == 2


class _Reference(transformers.TrainerCallback):
    """What happened at each optimizer step, seen from outside: the scale the step used and
    whether the weights moved (a skipped step leaves them untouched)."""

    def __init__(self, scaler):
        self.scaler, self.scales, self.skipped, self._before = scaler, [], [], None

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.scales.append(self.scaler.get_scale() if self.scaler is not None else None)
        self._before = [p.detach().clone() for p in model.parameters()]

    def on_optimizer_step(self, args, state, control, model=None, **kwargs):
        moved = any(not torch.equal(a, p) for a, p in zip(self._before, model.parameters(), strict=True))
        self.skipped.append(int(not moved))


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_mixed_precision_records_unscaled_norms_and_skipped_steps(tmp_path, check_runlog, precision):
    """fp16 through Accelerate's GradScaler (on CPU Accelerate makes none, so the test hands the
    Trainer's accelerator a CPU one before training: the Trainer's own code path does the rest),
    with a scale so high the first steps overflow; bf16 autocast needs no scaler."""
    run = tmp_path / "run"
    data = token_data()  # noqa: F821
    trainer = transformers.Trainer(model=tiny_gpt2(), train_dataset=data,  # noqa: F821
                                   args=args(tmp_path, eval_strategy="no", save_strategy="no", logging_steps=1,
                                             max_steps=8, **{precision: True}),
                                   callbacks=[RunlensCallback(run)])
    scaler = None
    if precision == "fp16":
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 40, backoff_factor=2.0 ** -8,
                                      growth_interval=1000)
        trainer.accelerator.scaler, trainer.accelerator.native_amp = scaler, True
    ref = _Reference(scaler)
    trainer.add_callback(ref)
    trainer.train()
    check_runlog(run)
    s = table(run, "scalars").to_pydict()
    logged = {e["step"] - 1: e["grad_norm"] for e in trainer.state.log_history if "grad_norm" in e}
    if precision == "fp16":
        assert s["loss_scale"] == ref.scales and s["step_skipped"] == ref.skipped
        assert 1 <= sum(ref.skipped) < len(ref.skipped)  # real overflows and real steps
    else:
        assert "loss_scale" not in s and not any(ref.skipped)
    for step, norm in logged.items():  # the Trainer's own pre-clip, unscaled norm
        if not s.get("step_skipped", [0] * 8)[step]:
            assert s["grad_norm"][step] == pytest.approx(norm, rel=1e-4), step
    events = table(run, "events")
    kinds = [] if events is None else events.column("kind").to_pylist()
    assert "nonfinite_grad" not in kinds  # overflows the scaler skipped are not divergence


def test_model_without_loss_falls_back_to_the_trainers_logs(tmp_path, check_runlog):
    class Ce(transformers.Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.pop("labels")
            logits = model(**inputs).logits
            loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
            return (loss, logits) if return_outputs else loss

    run = tmp_path / "run"
    data = token_data()  # noqa: F821
    Ce(model=tiny_gpt2(), args=args(tmp_path, eval_strategy="no", save_strategy="no",  # noqa: F821
                                    gradient_accumulation_steps=1),
       train_dataset=data, callbacks=[RunlensCallback(run)]).train()
    check_runlog(run)
    assert meta(run)["config"]["loss_source"] == "trainer logs"
    s = table(run, "scalars").to_pydict()
    assert s["step"] == [1, 3, 5, 7] and all(g > 0 for g in s["grad_norm"])


def test_exception_in_train_is_recorded_by_the_excepthook(tmp_path, check_runlog):
    script = tmp_path / "crash.py"
    script.write_text(TINY + textwrap.dedent(f"""
        import os, transformers
        os.environ["HF_HUB_OFFLINE"] = "1"
        torch.set_num_threads(1)
        from recorders.huggingface import RunlensCallback

        class Boom(transformers.TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                if state.global_step == 3:
                    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

        args = transformers.TrainingArguments(output_dir={str(tmp_path / 'out')!r}, max_steps=8,
            per_device_train_batch_size=4, report_to=[], use_cpu=True, save_strategy="no",
            disable_tqdm=True)
        transformers.Trainer(model=tiny_gpt2(), args=args, train_dataset=token_data(),
                             callbacks=[RunlensCallback({str(tmp_path / 'run')!r}), Boom()]).train()
    """))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1 and "out of memory" in proc.stderr
    run = tmp_path / "run"
    check_runlog(run)
    m = meta(run)
    assert m["status"] == "crashed" and m["error"]["type"] == "RuntimeError"
    assert table(run, "scalars").num_rows == 3
    import runlens

    assert "crash_oom" in {f["code"] for f in runlens.analyze(run).to_dict()["findings"]}
