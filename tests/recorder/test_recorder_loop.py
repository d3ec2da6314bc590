"""What only the recorder can see (issue 21.2) and where a rerun goes (issue 24.2), against torch's own
numbers measured here during training."""

from __future__ import annotations

import math

import pytest
from recorder_testutil import meta, read_table
from torch_steps import train_steps

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from recorders.torch import Recorder  # noqa: E402

QUIET = {"handle_signals": False, "announce": False}


class Buggy(nn.Module):
    """A detached stem (no gradient ever), an unused module, and ``out`` left out of the optimizer."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(4, 8)
        self.head = nn.Linear(8, 2)
        self.unused = nn.Linear(3, 3)
        self.out = nn.Linear(2, 2)
        self.late = nn.Linear(2, 2)
        self.use_late = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.head(self.stem(x).detach())
        return self.late(y) if self.use_late else y


def _train(run, *, clip: float, steps: int = 6, scheduler: bool = True):
    torch.manual_seed(0)
    model = Buggy()
    opt = torch.optim.SGD([p for n, p in model.named_parameters() if not n.startswith("out.")], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2) if scheduler else None
    truth = {"pre": [], "applied": [], "update": [], "training": []}
    with Recorder(run, model, opt, scheduler=sched, **QUIET) as rec:
        for step in range(steps):
            model.use_late = step >= 3  # ``late`` gets its first gradient at step 3
            opt.zero_grad()
            loss = model(torch.randn(16, 4)).pow(2).mean()
            loss.backward()
            truth["pre"].append(float(nn.utils.clip_grad_norm_(model.parameters(), clip)))
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            truth["applied"].append(math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads)))
            before = [p.detach().clone() for p in model.parameters()]
            opt.step()
            if sched is not None:
                sched.step()
            truth["update"].append(math.sqrt(sum(float((p.detach().double() - b.double()).pow(2).sum())
                                                 for p, b in zip(model.parameters(), before, strict=True))))
            rec.step(loss)
            if step == 2:
                with torch.no_grad():
                    model(torch.randn(16, 4))
                rec.validation(0.5)  # left in training mode, as the bug does
                truth["training"].append(1)
            if step == 4:
                model.eval()
                with torch.no_grad():
                    model(torch.randn(16, 4))
                model.train()  # restored before the loss is logged, as most loops do
                rec.validation(0.45)
                truth["training"].append(0)
            if step == 5:
                model.eval()
                rec.validation(0.4)
                truth["training"].append(0)
                model.train()
    return rec, truth


def test_the_loop_columns_match_torch(tmp_path):
    rec, truth = _train(tmp_path / "run", clip=1e-3)
    s = read_table(rec.run_dir, "scalars").sort_by("step").to_pydict()
    assert s["optimizer_steps"] == [1, 2, 3, 4, 5, 6]
    assert s["scheduler_steps"] == [1, 2, 3, 4, 5, 6]
    # grad_norm is the gradient before clipping, grad_norm_applied the one the step used.
    assert s["grad_norm"] == pytest.approx(truth["pre"], rel=1e-5)
    assert s["grad_norm_applied"] == pytest.approx(truth["applied"], rel=1e-5)
    assert max(s["grad_norm_applied"]) < 1.01e-3 < min(s["grad_norm"])
    assert s["update_norm"] == pytest.approx(truth["update"], rel=1e-4)
    e = read_table(rec.run_dir, "evals").sort_by("step").to_pydict()
    assert e["model_training"] == truth["training"]


def test_parameters_outside_the_optimizer_and_without_gradients(tmp_path):
    rec, _ = _train(tmp_path / "run", clip=10.0)
    m = meta(rec.run_dir)
    assert m["params_outside_optimizer"] == ["out.weight", "out.bias"]
    # ``late`` got a gradient from step 3 on, so it left the list.
    assert m["params_without_grad"] == ["stem.weight", "stem.bias", "unused.weight", "unused.bias",
                                        "out.weight", "out.bias"]
    names = {layer["name"] for layer in m["layers"]}
    assert {"stem.weight", "unused.bias", "out.weight", "late.weight"} <= names
    rows = read_table(rec.run_dir, "layers").to_pylist()
    stem = [r for r in rows if str(r["layer"]) == "stem.weight"]
    assert len(stem) == 6 and all(r["grad_norm"] is None and r["weight_norm"] > 0 for r in stem)
    late = sorted((r["step"], r["grad_norm"]) for r in rows if str(r["layer"]) == "late.weight")
    assert [g is None for _, g in late] == [True, True, True, False, False, False]


def test_no_scheduler_no_scheduler_column(tmp_path):
    rec, _ = _train(tmp_path / "run", clip=10.0, steps=2, scheduler=False)
    s = read_table(rec.run_dir, "scalars")
    assert "scheduler_steps" not in s.column_names and "optimizer_steps" in s.column_names


def _tiny(run, **kw):
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(run, model, opt, handle_signals=False, **kw) as rec:
        train_steps(rec, model, opt, 3, (4, 2))
    return rec


def test_a_rerun_goes_to_the_next_free_sibling_and_says_so_once(tmp_path, capsys):
    runs = tmp_path / "runs"
    first = _tiny(runs / "exp1")
    assert "already holds" not in capsys.readouterr().err
    second = _tiny(runs / "exp1")
    err = [line for line in capsys.readouterr().err.splitlines() if "already holds a run" in line]
    assert second.run_dir == runs / "exp1-2" and first.run_dir == runs / "exp1"
    assert len(err) == 1 and str(runs / "exp1") in err[0] and str(runs / "exp1-2") in err[0]
    (runs / "exp1-3").mkdir()  # an empty folder holds no run: it is free
    assert _tiny(runs / "exp1").run_dir == runs / "exp1-3"
    assert _tiny(runs / "exp1-2").run_dir == runs / "exp1-2-2"
    for name in ("exp1", "exp1-2", "exp1-3"):
        assert len(meta(runs / name)["attempts"]) == 1
        assert read_table(runs / name, "scalars").column("step").to_pylist() == [0, 1, 2]


def test_resume_true_appends_an_attempt(tmp_path):
    _tiny(tmp_path / "exp", announce=False)
    rec = _tiny(tmp_path / "exp", announce=False, resume=True)
    assert rec.run_dir == tmp_path / "exp"
    m = meta(tmp_path / "exp")
    assert [a["first_step"] for a in m["attempts"]] == [0, 3]
    assert not (tmp_path / "exp-2").exists()
    # resume=True on a folder with no run starts it.
    assert _tiny(tmp_path / "new", announce=False, resume=True).run_dir == tmp_path / "new"


def test_quiet_recorder_warns_instead_of_printing(tmp_path):
    _tiny(tmp_path / "exp", announce=False)
    with pytest.warns(UserWarning, match="already holds a run"):
        _tiny(tmp_path / "exp", announce=False)


@pytest.mark.parametrize(("clear", "expected"), [
    (None, 1),                                                    # zero_grad missing: every step adds on
    (lambda opt, model: opt.zero_grad(), 0),                      # set to None
    (lambda opt, model: opt.zero_grad(set_to_none=False), 0),     # zeroed in place
    (lambda opt, model: model.zero_grad(), 0),
])
def test_grad_not_cleared_says_whether_zero_grad_ran(tmp_path, clear, expected):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rec = Recorder(tmp_path / "run", model=model, optimizer=opt, announce=False)
    for _ in range(5):
        if clear is not None:
            clear(opt, model)
        for _ in range(2):  # two micro-batches per step: only the step's first accumulation is read
            model(torch.randn(16, 4)).pow(2).mean().backward()
        opt.step()
        rec.step(1.0)
    rec.close()
    s = read_table(rec.run_dir, "scalars").sort_by("step").to_pydict()
    assert s["grad_not_cleared"] == [None] + [expected] * 4


def test_grad_not_cleared_watches_a_parameter_the_optimizer_holds(tmp_path):
    # zero_grad() clears only the optimizer's parameters: a smaller one left out of it keeps summing
    # its gradient through a loop that clears every step, and must not be the one watched.
    torch.manual_seed(0)
    model = torch.nn.ModuleDict({"body": torch.nn.Linear(4, 8), "side": torch.nn.Linear(8, 1)})
    opt = torch.optim.SGD(model["body"].parameters(), lr=0.01)
    rec = Recorder(tmp_path / "run", model=model, optimizer=opt, announce=False)
    for _ in range(4):
        opt.zero_grad()
        model["side"](model["body"](torch.randn(16, 4))).pow(2).mean().backward()
        opt.step()
        rec.step(1.0)
    rec.close()
    s = read_table(rec.run_dir, "scalars").sort_by("step").to_pydict()
    assert s["grad_not_cleared"] == [None, 0, 0, 0]
