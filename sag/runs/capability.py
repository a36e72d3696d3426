"""What the packaged models can do, measured: the untrained SAG-6 group's accuracy on each
shipped held-out benchmark (the first run of each export in ``data/results/sag_runs``)
beside chance and its most frequent answer, for the Agent group page to say once, plainly,
before any debate is read."""
from __future__ import annotations

import json
from dataclasses import dataclass

from common.errors import ProjectError
from sag.runs.run_export import read_run_export
from sag.runs.shipped_runs import shipped_run_exports
from sag.runs.versus import run_rows

__all__ = ["Capability", "packaged_capability", "capability_text"]


@dataclass(frozen=True)
class Capability:
    """The untrained group on one held-out benchmark."""

    benchmark: str
    models: tuple[str, ...]
    items: int
    accuracy: float
    chance: float
    top_answer: str
    top_share: float


def packaged_capability() -> list[Capability]:
    """One entry per shipped export that can be read (an unreadable one is left out)."""
    out = []
    for folder in shipped_run_exports():
        try:
            export = read_run_export(folder)
        except ProjectError:
            continue
        base = export.run_ids()[0]
        runs = export.runs.set_index("run_id")
        row = run_rows({base: str(runs.loc[base, "group_name"])}, {base: export.outcomes_of(base)},
                       export.items_of(base), base)[0]
        models = tuple(dict.fromkeys(json.loads(str(runs.loc[base, "config_json"])).get("backbones", [])))
        out.append(Capability(str(runs.loc[base, "benchmark"]).removeprefix("heldout:"), models, row.items,
                              row.accuracy, row.chance, row.top_answer, row.top_share))
    return out


def capability_text(rows: list[Capability]) -> str:
    """One paragraph: the measured accuracies beside chance, and what that means."""
    if not rows:
        return ("The packaged models are very small language models; no shipped measurement of them is found, "
                "so read every debate as a demonstration of how the group works, not of medical reasoning.")
    models = ", ".join(dict.fromkeys(m for r in rows for m in r.models))
    scores = "; ".join(f"{r.benchmark} {r.accuracy:.3f} (chance {r.chance:.3f}, answer {r.top_answer} on "
                       f"{r.top_share:.0%} of questions)" for r in rows)
    return (f"What the packaged models can do: the untrained SAG-6 group of {models} agents, on "
            f"{rows[0].items} held-out questions per benchmark, scores {scores}. That is chance level, or what "
            "always answering one option scores: these models cannot answer clinical questions, and their rationales are often "
            "incoherent text. The debates show how the group deliberates, not medical reasoning; a right answer "
            "here is no evidence of knowledge.")
