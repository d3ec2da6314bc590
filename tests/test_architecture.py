"""The layout holds: no import cycle (function-local imports included), renderers only format,
and no module or function grows past the house limits (400 / 60 lines)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("runlens", "recorders")
ENGINE = ("runlens.detectors", "runlens.stats")  # the curve classifier lives in detectors
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 60


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its body (function-local and
    ``TYPE_CHECKING`` imports included: a cycle hidden behind either is still a cycle in the design)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_pkg = path.name == "__init__.py"
        base = name if is_pkg else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:
                    anchor = base.rsplit(".", node.level - 1)[0] if node.level > 1 else base
                    mod = f"{anchor}.{mod}" if mod else anchor
                targets = [f"{mod}.{a.name}" for a in node.names] + [mod]
            for t in targets:
                hit = _resolve(t, modules)
                if hit and hit != name:
                    deps.add(hit)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _is_package_init_of(a: str, b: str) -> bool:
    # A package's __init__ importing its own submodules (and them importing a sibling through it) is layout.
    return b.startswith(a + ".")


def test_the_import_graph_finds_real_imports():
    graph = import_graph()
    assert "runlens.io.loader" in graph["runlens.analysis"]
    assert "runlens.signals" in graph["runlens.detectors._base"]


def test_no_import_cycle():
    graph = import_graph()
    # Edges from a package to its own submodules are how packages expose them; the cycle that
    # matters is between distinct modules, so package -> own child edges are left out.
    pruned = {a: {b for b in deps if not _is_package_init_of(a, b)} for a, deps in graph.items()}
    assert _cycles(pruned) == []


def test_cycle_finder_sees_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_renderers_do_not_import_the_engine():
    graph = import_graph()
    bad = sorted((m, d) for m, deps in graph.items() if m.startswith("runlens.render")
                 for d in deps if d.startswith(ENGINE))
    assert bad == []


def test_no_module_or_function_over_the_limits():
    too_long = []
    for name, path in _modules().items():
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            too_long.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}.{node.name}: {lines} lines")
    assert too_long == []


def test_the_engine_imports_no_private_recorder_module():
    # The engine reads runs by the format's public rules (recorders.format, recorders.merge); a private
    # recorder module (recorders._*) is the recorder's own business and may change with it.
    graph = import_graph()
    bad = sorted((m, d) for m, deps in graph.items() if m.startswith(("runlens", "reports"))
                 for d in deps if d.startswith("recorders.") and d.split(".")[1].startswith("_"))
    assert bad == []


def test_the_private_import_check_sees_one():
    graph = {"runlens.x": {"recorders._merge"}, "runlens.y": {"recorders.merge"}}
    bad = [(m, d) for m, deps in graph.items() for d in deps if d.split(".")[1].startswith("_")]
    assert bad == [("runlens.x", "recorders._merge")]


# -- the chain of plain values (issue 22): open_run -> Run -> signals_of -> Signals -> analyze ->
# Diagnosis -> build_report_data(diagnosis, signals) -> ReportData -> render.* -> exit status.

#: Run methods that read its tables; past the signals stage only ``Signals`` calls them.
RUN_READERS = frozenset({"column", "steps", "has", "layer_matrix", "layer_grid", "layer_names", "prime_steps"})
#: Names a module holds a Run by (``signals.run`` included): a Run has no business past the signals.
RUN_HANDLES = frozenset({"run", "_run"})
#: Functions that take a Run (not its signals): calling one reads the run past the signals stage.
RUN_FUNCTIONS = frozenset({"run_numbers", "duration", "verdict_step", "logged", "loss_signals", "skipped_steps",
                           "load_run", "open_run", "signals_of", "facts_of"})


def _module_names(prefix: str) -> dict[str, Path]:
    return {m: p for m, p in _modules().items() if m == prefix or m.startswith(prefix + ".")}


def run_reads(source: str, functions: frozenset[str] = RUN_FUNCTIONS) -> list[str]:
    """Where ``source`` reaches a Run: a name or attribute ``run``, a call of a Run table reader
    (``x.column(...)``, ``x.steps(...)``), or a call of one of ``functions``, which take a run."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in RUN_HANDLES:
            found.append(f"line {node.lineno}: name {node.id}")
        elif isinstance(node, ast.arg) and node.arg in RUN_HANDLES:
            found.append(f"line {node.lineno}: parameter {node.arg}")
        elif isinstance(node, ast.Attribute) and node.attr in RUN_HANDLES:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if (isinstance(func, ast.Attribute) and name in RUN_READERS) or name in functions:
                found.append(f"line {node.lineno}: {name}()")
    return found


def test_the_analysis_does_not_build_report_data():
    graph = import_graph()
    bad = sorted(d for d in graph["runlens.analysis"] | graph["runlens.diagnosis"]
                 if d == "runlens.report_data" or d.startswith("runlens.report_data."))
    assert bad == []


def test_renderers_neither_import_io_nor_read_a_run():
    graph = import_graph()
    upstream = ("runlens.io", "runlens.signals", "runlens.analysis", "runlens.report_data", "runlens.summary")
    bad = sorted((m, d) for m, deps in graph.items() if m.startswith("runlens.render")
                 for d in deps if d.startswith(upstream))
    assert bad == []
    # The renderers' own ``duration`` formats seconds; an audit row's ``run`` is the run's path.
    reads = {m: [r for r in run_reads(p.read_text(), RUN_FUNCTIONS - {"duration"}) if not r.endswith(".run")]
             for m, p in _module_names("runlens.render").items()}
    assert {m: r for m, r in reads.items() if r} == {}


def test_the_report_data_builder_reads_signals_not_the_run():
    graph = import_graph()
    modules = _module_names("runlens.report_data")
    assert modules, "runlens/report_data is gone: update this test"
    bad = sorted((m, d) for m in modules for d in graph[m] if d.startswith(("runlens.io", "runlens.analysis")))
    assert bad == []
    reads = {m: run_reads(p.read_text()) for m, p in modules.items()}
    assert {m: r for m, r in reads.items() if r} == {}


def test_the_run_read_check_sees_raw_columns_and_passes_signals():
    raw = ("def f(run, sig):\n    a = run.column('scalars', 'lr')\n    b = sig.run.steps('scalars')\n"
           "    return run_numbers(sig, x), a, b\n")
    assert len(run_reads(raw)) >= 4
    clean = ("def f(sig, diagnosis):\n    s = sig.scalar('lr')\n    v = sig.layers.values('weight_norm')\n"
             "    return s.steps, v, sig.validation.get('val_loss'), diagnosis.key_numbers\n")
    assert run_reads(clean) == []


def _handles(value, seen: set[int] | None = None) -> list[str]:
    """Every object inside ``value`` that is not a plain value: a callable, an Arrow table or array,
    a numpy array, or anything else that is not data (walks mappings, sequences and dataclasses)."""
    import dataclasses
    from collections.abc import Mapping

    seen = set() if seen is None else seen
    if id(value) in seen or value is None or isinstance(value, (bool, int, float, str, bytes)):
        return []
    seen.add(id(value))
    if isinstance(value, Mapping):
        return [h for k, v in value.items() for h in _handles(k, seen) + _handles(v, seen)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [h for v in value for h in _handles(v, seen)]
    if dataclasses.is_dataclass(value) and not callable(value):
        return [h for f in dataclasses.fields(value) for h in _handles(getattr(value, f.name), seen)]
    return [type(value).__module__ + "." + type(value).__qualname__]


def test_a_diagnosis_holds_plain_values_only():
    import pytest

    sample = ROOT / "sample_runs" / "vanishing_gradients"
    if not (sample / "run.json").is_file():
        pytest.skip("sample_runs/ is missing: run python sample_runs/generate.py")
    import runlens

    d = runlens.analyze(sample)
    assert d.findings and d.meta and d.step_range
    assert _handles(d) == []


def test_the_plain_value_walk_sees_a_handle():
    import numpy as np

    from runlens.diagnosis import CurveVerdict, Diagnosis

    d = Diagnosis(path="p", name="n", status="finished", curve=CurveVerdict("healthy", "ok", {"f": print}),
                  findings=(), meta={"x": np.zeros(3)})
    assert sorted(_handles(d)) == ["builtins.builtin_function_or_method", "numpy.ndarray"]
