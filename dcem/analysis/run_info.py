"""What a stored run is: its kind, methods and, for language-model runs, its dataset,
scenarios and agents (read from the run's stored specification; no agent is called)."""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from dcem.core.vocabulary import SCENARIOS, mediated_methods, order_methods
from dcem.store.database import Store
from dcem.store.run_reads import cell_scenarios, has_agent_turns, outcome_methods, run_kind, run_rows, run_spec_text

__all__ = ["RUN_COLUMNS", "run_spec", "run_kind", "is_llm_run", "run_methods", "runs_overview",
           "describe_run", "run_label", "run_labels",
           "RunPick", "default_run"]

RUN_COLUMNS = ["run_id", "kind", "status", "dataset", "scenarios", "seeds", "agents", "created_at",
               "finished_at"]


def _parse(blob: object) -> dict[str, Any]:
    try:
        spec = json.loads(blob) if isinstance(blob, str) else {}
    except ValueError:
        return {}
    return spec if isinstance(spec, dict) else {}


def run_spec(store: Store, run_id: str) -> dict[str, Any]:
    """The stored specification of a run ({} when it is not a JSON object)."""
    return _parse(run_spec_text(store, run_id))


def is_llm_run(store: Store, run_id: str) -> bool:
    """True for a run of language-model agents (kind ``clinical``, or agent turns stored)."""
    if run_kind(store, run_id) == "clinical":
        return True
    return has_agent_turns(store, run_id)


def run_methods(store: Store, run_id: str, *, mediated_only: bool = False) -> list[str]:
    """The methods with stored outcomes, in display order (single, free, pool, dcem, dcem_noesc)."""
    order = order_methods(outcome_methods(store, run_id))
    return [m for m in order if m in mediated_methods()] if mediated_only else order


def _join(values: object) -> str | None:
    if isinstance(values, (list, tuple)):
        return ", ".join(str(v) for v in values)
    return None if values is None else str(values)


def runs_overview(store: Store) -> pd.DataFrame:
    """Every stored run, newest first, with its dataset, scenarios, seeds and agents
    (columns :data:`RUN_COLUMNS`; dataset and agents are empty for synthetic runs)."""
    out = []
    for run_id, kind, status, spec_json, seeds, created, finished in run_rows(store):
        spec = _parse(spec_json)
        out.append({"run_id": run_id, "kind": kind, "status": status, "dataset": spec.get("dataset"),
                     "scenarios": _join(spec.get("scenarios")), "seeds": _join(seeds),
                     "agents": _join(spec.get("agents")), "created_at": created, "finished_at": finished})
    return pd.DataFrame(out, columns=RUN_COLUMNS)


def _clinical_options(spec: dict[str, Any]) -> str:
    """The clinical run options worth naming beside the agents (empty when none is set)."""
    parts = []
    k = spec.get("few_shot_k")
    if isinstance(k, int) and not isinstance(k, bool) and k > 0:
        parts.append(f"{k} solved CAL case{'s' if k > 1 else ''} in each LLM prompt (retrieval few-shot)")
    dialogue = spec.get("stat_dialogue")
    if isinstance(dialogue, dict):
        parts.append("statistical members answer peers and challenges (anchor {}, kappa {}, compliance {})".format(
            *(dialogue.get(k, "?") for k in ("anchor", "kappa", "compliance"))))
    if spec.get("stop_when_decided") is True:
        parts.append("TEST cases stop when D-CEM decides them")
    return "".join(f", {p}" for p in parts)


def describe_run(store: Store, run_id: str) -> str:
    """One sentence naming what a run holds, e.g. for a page caption."""
    kind, spec = run_kind(store, run_id), run_spec(store, run_id)
    if kind == "clinical":
        return (f"Clinical run on {spec.get('dataset', '?')}: scenarios {_join(spec.get('scenarios')) or '?'}, "
                f"agents {_join(spec.get('agents')) or '?'}, {spec.get('mode', 'scored')} answers"
                f"{_clinical_options(spec)}.")
    scen = _join(spec.get("scenarios"))
    return f"{kind.capitalize()} run" + (f": scenarios {scen}." if scen else ".")


@dataclass(frozen=True)
class RunPick:
    """A run a person chose in one page's picker, and the session's current run then."""

    run_id: str
    current: str | None


def default_run(options: Sequence[str], *, current: str | None, picked: RunPick | None,
                featured: str | None = None) -> str | None:
    """The run a page's picker shows: the person's own pick on that page while no newer
    launch has changed the session's ``current`` run since, else ``current``, else
    ``featured`` (the demo's opening run, :func:`dcem.store.demo.opening_run`), else the
    first option (the newest run); None when there are no options."""
    if picked is not None and picked.current == current and picked.run_id in options:
        return picked.run_id
    for run_id in (current, featured):
        if run_id is not None and run_id in options:
            return run_id
    return options[0] if options else None


_WORLD_WORDS = {1.0: "seed world", 3.0: "sharpened world"}  # dcem.synthetic.spec.WORLDS by sharpness


def _scenario_span(scenarios: Sequence[str]) -> str:
    """S1-S3b for three or more consecutive scenarios of the registry, else S1/S3b."""
    names = [str(s) for s in scenarios]
    if len(names) >= 3 and all(n in SCENARIOS for n in names):
        start = SCENARIOS.index(names[0])
        if tuple(names) == SCENARIOS[start:start + len(names)]:
            return f"{names[0]}-{names[-1]}"
    return "/".join(names) or "no scenarios"


def _world(spec: Mapping[str, Any]) -> str | None:
    sharpness = spec.get("sharpness")
    if isinstance(sharpness, bool) or not isinstance(sharpness, (int, float)):
        return None
    return _WORLD_WORDS.get(float(sharpness), f"sharpness {float(sharpness):g}")


def run_label(run_id: str, kind: str, spec: Mapping[str, Any], seeds: Sequence[int],
              created_at: _dt.datetime | None, *, scenarios: Sequence[str] = (), finished: bool = True) -> str:
    """A run's name for a picker, e.g. "syn-70b6c021 · synthetic, seed world, S1-S3b × 3 seeds ·
    2026-11-23 14:05" (clinical runs name the dataset and agents; "unfinished" when the
    run did not reach its end).  ``scenarios`` stands in when the spec names none."""
    named = spec.get("scenarios")
    scen = [str(s) for s in named] if isinstance(named, (list, tuple)) else list(scenarios)
    n = len(seeds)
    parts = [kind]
    if kind == "clinical" and spec.get("dataset"):
        parts.append(str(spec["dataset"]))
    world = _world(spec) if kind == "synthetic" else None
    if world:
        parts.append(world)
    parts.append(f"{_scenario_span(scen)} × {n} seed{'' if n == 1 else 's'}")
    agents = spec.get("agents")
    if isinstance(agents, (list, tuple)) and agents:
        parts.append(" + ".join(str(a) for a in agents))
    label = f"{run_id} · {', '.join(parts)}"
    if isinstance(created_at, _dt.datetime):
        label += f" · {created_at:%Y-%m-%d %H:%M}"
    return label if finished else label + " · unfinished"


def run_labels(store: Store) -> dict[str, str]:
    """:func:`run_label` of every stored run, by run id."""
    cells: dict[str, list[str]] = {}
    for run_id, scenario in cell_scenarios(store):
        cells.setdefault(str(run_id), []).append(str(scenario))
    return {str(r): run_label(str(r), str(kind), _parse(spec), list(seeds or []), created,
                              scenarios=_order_scenarios(cells.get(str(r), [])), finished=status == "finished")
            for r, kind, status, spec, seeds, created, _ in run_rows(store)}


def _order_scenarios(names: Sequence[str]) -> list[str]:
    """Scenarios in the registry's order, unknown names after them."""
    known = [s for s in SCENARIOS if s in names]
    return known + sorted(n for n in names if n not in SCENARIOS)
