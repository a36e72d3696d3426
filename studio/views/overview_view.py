"""The Overview's words for a newcomer: what the dashboard does and where runs come from,
what the selected run is (the demo data shipped with the project, or a run of one's own),
and what each scenario S1-S3b means, in one line each, where the run first names them.

Pure text from the store's run ids and the run's spec; the page shows it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from dcem.analysis.run_info import run_kind, run_spec
from dcem.core.vocabulary import SCENARIOS
from dcem.store.database import Store
from dcem.store.demo import FEATURED_RUN, demo_run_exports

__all__ = ["BesideChance", "beside_chance_view", "INTRO", "SCENARIO_LINES", "DEMO_SHOWS", "RunIntro", "run_intro", "scenario_lines", "demo_note",
           "run_heading"]

INTRO = ("D-CEM mediates a panel of diagnostic agents: each round it lets them continue, challenges one agent on a "
         "dangerous alternative, certifies a low-risk decision, or escalates the case to a person. The tables below "
         "compare it with a single agent, free discussion and a fixed pool on stored runs. Launch a synthetic "
         "experiment of your own on the Experiments page (or from a terminal with `python -m dcem run synthetic`; "
         "clinical runs of language-model agents with `python -m dcem_clinical run`), then step through its cases "
         "on the Case walkthrough page.")

# one line per scenario: the synthetic world's agents (Table 3) and the clinical roles (App. H.1) err alike
SCENARIO_LINES: dict[str, str] = {
    "S1": "ideal: every agent is reliable.",
    "S2": "asymmetric: one agent is reliable, the other is weak (in clinical runs it leans toward a benign answer) "
          "and misses high-risk cases.",
    "S3a": "noisy, complementary: each agent is reliable on different classes, so their errors partly offset.",
    "S3b": "noisy, not complementary: the agents share one bias, so they err together.",
}
assert tuple(SCENARIO_LINES) == SCENARIOS

# what each shipped export's runs show (the export folders of dcem.store.demo.DEMO_EXPORTS)
DEMO_SHOWS: dict[str, str] = {
    "dcem_synthetic": "rule-guided agents of the synthetic world, every scenario over ten seeds (three variants of "
                      "the world: the specification's, sharpened agents, and agents that report their most likely "
                      "label)",
    "dcem_clinical": "two small language models (SmolLM2-135M and Gemma 3 270M) as diagnostic agents, one seed",
    "dcem_clinical_mixed": "a statistical agent fitted on the calibration cases beside SmolLM2-135M",
    "dcem_clinical_pair": "SmolLM2-135M and Gemma 3 270M, each prompt showing three solved calibration cases",
    "dcem_clinical_views": "two statistical members that each read part of a case, where D-CEM certifies, "
                           "challenges and escalates cases side by side",
    "dcem_clinical_trio": "those two members and the trained DDXPlus-8 diagnostician (SmolLM2-135M with a LoRA "
                          "adapter) reading the symptoms",
    "own_cases_abdominal": "a researcher's own case file (docs/own_cases.md): 275 invented abdominal-pain cases in "
                           "five classes, SmolLM2-135M beside a statistical member, one seed",
}


def scenario_lines(scenarios: Sequence[str]) -> str:
    """Markdown, one line per scenario of the run (in the registry's order)."""
    known = [s for s in SCENARIOS if s in set(scenarios)]
    return "\n".join(f"- **{s}** {SCENARIO_LINES[s]}" for s in known)


def demo_note(run_id: str, stored: Sequence[str]) -> str:
    """What the store and the selected run are: the demo data (which of its runs and what
    it shows) or a run of one's own."""
    sources = demo_run_exports()
    demo_stored = [r for r in stored if r in sources]
    n = len(demo_stored)
    if run_id not in sources:
        own = "This run is not part of the demo data: it was run or imported here."
        return own + (f" The store also holds {n} demo run{'' if n == 1 else 's'}." if n else "")
    featured = " The pages open on it until you run or import a run of your own." if run_id == FEATURED_RUN else ""
    return (f"Demo data: the store holds {n} run{'' if n == 1 else 's'} shipped with the project, so every page has "
            "something to show; they compare D-CEM with a single agent, free discussion and a fixed pool on "
            f"recorded cases. This one shows {DEMO_SHOWS.get(sources[run_id], 'a run')}.{featured}")


def run_heading(run_id: str, kind: str, spec: Mapping[str, Any]) -> str:
    """The subheader over the run's tables."""
    if kind == "clinical":
        return f"Run {run_id}: {spec.get('dataset', '?')}, mean over seeds"
    return f"Run {run_id}: method comparison, mean over seeds"


@dataclass(frozen=True)
class RunIntro:
    """What the Overview says over a run's tables: ``kind`` (synthetic or clinical), its
    ``dataset`` (clinical runs), the ``heading``, the ``demo`` note and the ``scenarios``
    (markdown, one line each)."""

    kind: str
    dataset: str
    heading: str
    demo: str
    scenarios: str


def run_intro(store: Store, run_id: str, stored: Sequence[str]) -> RunIntro:
    """:class:`RunIntro` of a stored run; ``stored``: every run id the store holds."""
    kind, spec = run_kind(store, run_id), run_spec(store, run_id)
    named = spec.get("scenarios")
    scenarios = [str(s) for s in named] if isinstance(named, (list, tuple)) else list(SCENARIOS)
    return RunIntro(kind, str(spec.get("dataset", "?")), run_heading(run_id, kind, spec),
                    demo_note(run_id, stored), scenario_lines(scenarios))


@dataclass(frozen=True)
class BesideChance:
    """A run's TEST accuracy per method beside chance and the most frequent class, with its
    top answer and lowest recall, and the recall of every class (pooled over seeds)."""

    caption: str
    table: Any
    recall: Any


def beside_chance_view(store: Store, run_id: str) -> BesideChance | None:
    """:mod:`dcem_clinical.report.beside_chance` for a stored run; None without outcomes."""
    from dcem.store.run_reads import cell_labels
    from dcem_clinical.report.beside_chance import beside_chance, recall_by_class

    labels = next(iter(cell_labels(store, run_id).values()), None)
    outcomes = store.outcomes(run_id)
    if not labels or outcomes.empty:
        return None
    k = len(labels)
    caption = (f"Chance is 1/{k} = {1 / k:.3f}. \"Most frequent class\" is the share of the cases whose truth is the "
               "most frequent class: what answering that class every time scores. A figure pooled over seeds names "
               "its worst seed.")
    return BesideChance(caption, beside_chance(outcomes, labels), recall_by_class(outcomes, labels).reset_index())
