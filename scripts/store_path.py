"""Which modules a run hands its store through, measured by running it.

Run with ``.venv/bin/python scripts/store_path.py`` from the project root (no model is
loaded: the scripted models of the tests answer).  It plays three small runs with a
profiler on: a SAG run (``sag.run.run_sag``, one group on two items), a SAG evaluation
(``run_group_eval``, its safety part on two items) and a clinical grid
(``dcem_clinical.run.run_clinical``, one cell of two scripted members).  A call *hands
the run's store on* when one of its arguments is the store object itself and its caller is
not the store's own module (what the store's methods pass ``self`` to, a transaction or
its call-log table, is the store's implementation, not the run's path).  For each run it
prints the modules such calls enter, in order of first entry, the packages and
sub-packages among them, and every call *back up*: from a module into one that imports it,
directly or not (only a callback can do that).  ``docs/architecture.md`` quotes its output
before and after the run ledger and sag/'s sub-packages.
"""
from __future__ import annotations

import importlib
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PACKAGES = ("common", "dcem", "runtime", "clinical", "dcem_clinical", "sag", "studio", "training")


def _first(*names: str) -> Any:
    """The first of ``module:attribute`` names that imports (modules moved between versions)."""
    for name in names:
        module, attr = name.split(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"none of {names}")


def trace(store: Any, run: Callable[[], Any]) -> tuple[list[str], list[tuple[str, str, str]]]:
    """(modules entered by store-carrying calls in order, caller/callee module pairs)."""
    home = type(store).__module__
    open_frames: dict[int, str] = {}
    order: list[str] = []
    edges: list[tuple[str, str, str]] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "return":
            open_frames.pop(id(frame), None)
            return
        if event != "call":
            return
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".")[0] not in PACKAGES:
            return
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if not any(frame.f_locals.get(n) is store for n in names):
            return
        parent = frame.f_back
        while parent is not None and id(parent) not in open_frames:
            parent = parent.f_back
        if parent is not None and open_frames[id(parent)] in (home, ""):
            open_frames[id(frame)] = ""  # the store's own helpers, and what they call: not the run's path
            return
        if parent is not None and open_frames[id(parent)] != module:
            edges.append((open_frames[id(parent)], module, f"{parent.f_code.co_name} -> {code.co_name}"))
        open_frames[id(frame)] = module
        if module not in order:
            order.append(module)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return order, edges


def _report(title: str, store: Any, order: list[str], edges: list[tuple[str, str, str]]) -> str:
    import grimp

    graph = grimp.build_graph(*PACKAGES)
    ups = sorted({(a, b, how) for a, b, how in edges
                  if graph.chain_exists(importer=b, imported=a) and not graph.chain_exists(importer=a, imported=b)})
    packages = {m if graph.find_children(m) or "." not in m else m.rsplit(".", 1)[0] for m in order}
    lines = [f"{title}: the store ({type(store).__name__}) handed to {len(order)} modules of {len(packages)} "
             f"packages and sub-packages ({', '.join(sorted(packages))}), {len(ups)} times back up",
             "  " + " -> ".join(order)]
    lines += [f"  back up: {a} -> {b} ({how}; {b} imports {a})" for a, b, how in ups]
    return "\n".join(lines)


def _sag_run(folder: Path) -> list[str]:
    SagStore = _first("sag.store.tables:SagStore")
    preset = _first("sag.config:preset", "sag.roles.config:preset", "sag.group.config:preset")
    SagRunSpec = _first("sag.run:SagRunSpec", "sag.runs.run:SagRunSpec")
    run_sag = _first("sag.run:run_sag", "sag.runs.run:run_sag")
    from tests.sag.fakes import ScriptedTurns

    def answer(agent: str, prompt: str, request: Any) -> tuple[str, str]:
        return request.options[0], "It fits."

    with SagStore(folder / "sag.duckdb") as store:
        spec = SagRunSpec("medqa", preset("sag-6"), n_items=2)
        runners = {m: ScriptedTurns(answer) for m in spec.cfg.models()}
        out = [_report("a SAG run (run_sag)", store, *trace(store, lambda: run_sag(store, spec, runners=runners,
                                                                                    retrievers={})))]
    with SagStore(folder / "eval.duckdb") as store:
        run_group_eval = _first("sag.evaluation.runner:run_group_eval")
        SuiteSpec = _first("sag.evaluation.suite:SuiteSpec")
        cfg = preset("sag-6")
        runners = {m: ScriptedTurns(answer) for m in cfg.models()}
        out.append(_report("a SAG evaluation (run_group_eval)", store, *trace(store, lambda: run_group_eval(
            store, SuiteSpec("safety", n_items=2), cfg, runners=runners, retrievers={}, measure_memory=False))))
    return out


def _clinical(folder: Path) -> str:
    from dcem.core.config import MediatorConfig
    from dcem.store.database import Store
    from dcem_clinical.run import run_clinical
    from dcem_clinical.spec import ClinicalSpec
    from tests.dcem_clinical.clinical_fakes import oracle_backend

    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S1",), seeds=(0,), n_cal=12, n_test=8,
                        agents=("fake-a", "fake-b"), base_config=MediatorConfig(prior="empirical", t_max=3),
                        free_rounds=2)
    backends = [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=6, tag="b")]
    with Store(folder / "clinical.duckdb") as store:
        return _report("a clinical grid (run_clinical)", store,
                       *trace(store, lambda: run_clinical(store, spec, backends=backends)))


def measure() -> str:
    """The three runs' paths, as ``docs/architecture.md`` quotes them."""
    with tempfile.TemporaryDirectory() as tmp:
        return "\n".join([*_sag_run(Path(tmp)), _clinical(Path(tmp))])


def main() -> int:
    print(measure())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
