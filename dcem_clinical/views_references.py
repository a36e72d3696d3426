"""``python -m dcem_clinical views-references``: the whole-case references a view group is
measured against (``docs/group_views.md``).

On the 200 TEST cases of DDXPlus-8 HELD-OUT (:mod:`clinical.group_folds`), the answers of

- the statistical member on the whole case (naive Bayes over the evidence codes,
  ``nb-evidence``) fit on the 495 TRAIN cases, and the same member fit and asked on each
  view alone (what a view holds, for a member that reads it well);
- the trained diagnostician (``smollm2-135m+lora:ddxplus8-grpo-balanced`` by default, trained
  on whole TRAIN cases with every diagnosis drawn equally often; ``--diagnostician`` names
  another) answering the whole case as a panel member does (scored, neutral role);
- the same diagnostician reading each view a member of the view group reads;

written as JSON ``{name: {case id: letter}}`` for ``python -m sag views-report --references``.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

__all__ = ["add_views_references_command", "nb_answers", "diagnostician_name", "DIAGNOSTICIAN"]

LETTERS = "ABCDEFGH"
DIAGNOSTICIAN = "smollm2-135m+lora:ddxplus8-grpo-balanced"


def nb_answers(view: str = "all") -> dict[str, str]:
    """The naive Bayes member fit on TRAIN, answering the TEST cases; both read ``view`` of
    each case (the whole case by default)."""
    from clinical.datasets import load_dataset
    from clinical.group_folds import group_folds
    from clinical.training_split import training_split
    from dcem_clinical.stat_agent import case_documents
    from dcem_clinical.stat_model import fit_stat_model

    cases = {c.source_id: c for c in load_dataset("ddxplus8").cases}
    train = [cases[i] for i in training_split("ddxplus8").train_ids]
    test = [cases[i] for i in group_folds().test]
    fitted = fit_stat_model("nb-evidence", [c.source_id for c in train], case_documents("nb-evidence", train, view),
                            [c.label for c in train], 8, np.random.default_rng(0))
    probs = fitted.predict(case_documents("nb-evidence", test, view))
    return {c.source_id: LETTERS[int(k)] for c, k in zip(test, probs.argmax(axis=1))}


def diagnostician_answers(view: str, threads: int | None, key: str = DIAGNOSTICIAN) -> dict[str, str]:
    """The trained diagnostician ``key``'s answers on the TEST cases, reading ``view`` of each."""
    from clinical.datasets import load_dataset
    from clinical.group_folds import group_folds
    from dcem_clinical.agent import DiagnosticAgent
    from dcem_clinical.prompts import ROLE_NEUTRAL
    from dcem_clinical.stat_views import case_view_text
    from runtime.factory import make_backend

    dataset = load_dataset("ddxplus8")
    cases = {c.source_id: c for c in dataset.cases}
    agent = DiagnosticAgent(make_backend(key, n_threads=threads), dataset.labels, role=ROLE_NEUTRAL)
    out = {}
    for case_id in group_folds().test:
        report = agent.classify(case_view_text("ddxplus8", view, cases[case_id]))
        out[case_id] = LETTERS[int(report.label)]
    return out


def diagnostician_name(key: str) -> str:
    """How the references name the diagnostician: with its adapter (``ddxplus8-grpo-balanced``)."""
    adapter = key.split("+lora:", 1)[1] if "+lora:" in key else key
    return f"the diagnostician ({adapter.rsplit('/', 1)[-1]})"


def _cmd(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and out.is_dir():
        from common.errors import ConfigError

        raise ConfigError("out", f"{out} is a folder; give a file name")
    who = diagnostician_name(args.diagnostician)
    answers = {"naive Bayes on the whole case (fit on TRAIN)": nb_answers(),
               f"{who} on the whole case": diagnostician_answers("all", args.threads, args.diagnostician)}
    for view in (v.strip() for v in args.views.split(",")):
        if view:
            answers[f"naive Bayes reading {view} only (fit on TRAIN)"] = nb_answers(view)
            answers[f"{who} reading {view} only"] = diagnostician_answers(view, args.threads, args.diagnostician)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(answers)} reference answer sets for {len(next(iter(answers.values())))} cases to {out}")
    return 0


def add_views_references_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("views-references", help="whole-case reference answers for a view group's measurement")
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--views", default="pain-location,history,pain-character",
                   help="views naive Bayes and the diagnostician also read alone (comma list; empty for none)")
    p.add_argument("--diagnostician", default=DIAGNOSTICIAN, help="the trained diagnostician's model key")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=_cmd)
