"""A view group measured on DDXPlus-8 HELD-OUT (``python -m sag views-report``).

Reads the stored runs of one view group (``docs/group_views.md``): the group on the 200
TEST cases (``ddxplus8``, ``--items 200 --seed 0``), on the 130 CAL cases
(``ddxplus8-cal``: its members' round-0 answers fit D-CEM's confusion matrices), its D-CEM
variant (method ``dcem``, calibrated on CAL), its twins (``ddxplus8-twins``) and the single
SmolLM2 answer on the same TEST cases; and, optionally, reference answers on those cases
from a JSON file (``{name: {item id: letter}}``, e.g. the whole-case diagnostician and
naive Bayes, written by ``python -m dcem_clinical views-references``).  Every row is
measured by :mod:`sag.views.measures` on the same items.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from common.errors import InputError
from sag.group.config import AgentRole, GroupConfig
from sag.views.measures import (AnswerRow, Changes, answer_changes, answer_row, cdr, chance_cdr, pooled_letters,
                               vote_letters)

__all__ = ["ViewRuns", "ViewReport", "view_specs", "view_runs", "build_report", "report_markdown", "report_frame",
           "DIAGNOSES", "GROUP_ROW", "VOTE_ROW", "AFTER_VOTE_ROW"]

DIAGNOSES = ("Anaphylaxis", "Pulmonary embolism", "NSTEMI / STEMI", "Myocarditis", "URTI", "Viral pharyngitis",
             "GERD", "Bronchitis")
LETTERS = tuple("ABCDEFGH")
N_TEST, N_CAL = 200, 130
GROUP_ROW = "the group (debate and judge)"
VOTE_ROW = "majority vote of the members"
AFTER_VOTE_ROW = "majority vote of the members after the debate"
"""The plurality of the members' round-1 answers: beside the group, what the judge adds."""


@dataclass(frozen=True)
class ViewRuns:
    """The run ids of one view group's measurement (see the module docstring)."""

    test: str
    cal: str
    dcem: str
    twins: str
    single: str


def view_specs(cfg: GroupConfig, n_test: int = N_TEST, n_cal: int = N_CAL) -> dict[str, Any]:
    """The runs the group's measurement plays, by role: the group on ``n_test`` TEST cases and
    on ``n_cal`` CAL cases, one single SmolLM2 answer per TEST case, the group's D-CEM
    variant (calibrated on ``n_cal`` cases) and its twins (smaller numbers: a quick try)."""
    from sag.group.config import preset
    from sag.runs.run import SagRunSpec

    mediated = cfg.with_changes(name=f"{cfg.name}-dcem", method="dcem", n_cal=n_cal, t_max=max(2, cfg.t_max))
    return {"test": SagRunSpec("ddxplus8", cfg, n_test, 0), "cal": SagRunSpec("ddxplus8-cal", cfg, n_cal, 0),
            "single": SagRunSpec("ddxplus8", preset("single"), n_test, 0),
            "dcem": SagRunSpec("ddxplus8", mediated, n_test, 0),
            "twins": SagRunSpec("ddxplus8-twins", cfg, 2 * n_test, 0)}


def view_runs(cfg: GroupConfig, n_test: int = N_TEST, n_cal: int = N_CAL) -> ViewRuns:
    """The run ids the group's measurement uses (the ids ``python -m sag run`` gives them)."""
    specs = view_specs(cfg, n_test, n_cal)
    return ViewRuns(**{name: spec.run_id() for name, spec in specs.items()})


@dataclass(frozen=True)
class ViewReport:
    rows: tuple[AnswerRow, ...]
    chance: float
    best_letter: tuple[str, float]
    changes: tuple[Changes, ...]
    cdr: dict[str, tuple[float, int]]
    chance_cdr: float
    cost: dict[str, float]
    views: dict[str, str] = field(default_factory=dict)


def _reasoning(cfg: GroupConfig) -> list[str]:
    return [a.agent_id for a in cfg.agents() if a.role is AgentRole.REASONING]


def _round_answers(frame: pd.DataFrame, agents: Sequence[str], t: int, items: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(letters (A, n) as indices, probabilities (A, n, K)) of the agents' round-``t`` answers."""
    k = len(LETTERS)
    letters, probs = np.zeros((len(agents), len(items)), dtype=int), np.full((len(agents), len(items), k), 1.0 / k)
    rows = frame[(frame["round"] == t) & frame["agent_id"].isin(agents)]
    where = {i: n for n, i in enumerate(items)}
    for r in rows.itertuples():
        if r.item_id not in where or r.answer not in LETTERS:
            continue
        a, n = list(agents).index(r.agent_id), where[r.item_id]
        letters[a, n] = LETTERS.index(r.answer)
        probs[a, n] = np.asarray(r.distribution, dtype=float)[:k]
    return letters, probs


def _need(store: Any, run_id: str, what: str) -> pd.DataFrame:
    outcomes = store.outcomes(run_id)
    if outcomes.empty:
        raise InputError("run", f"no stored answers of {what} ({run_id}); run it first (python -m sag eval-views)")
    return outcomes


def _stored_rows(store: Any, runs: ViewRuns, items: Sequence[str], truth: Sequence[str], group: Sequence[str],
                 rng: np.random.Generator) -> list[AnswerRow]:
    """The group's D-CEM variant and the single answer, when stored."""
    rows = []
    for run_id, name in ((runs.dcem, "the group with D-CEM as its stopping rule"),
                         (runs.single, "one SmolLM2 answer on the whole case")):
        stored = store.outcomes(run_id)
        if not stored.empty:
            got = dict(zip(stored["item_id"], stored["answer"]))
            rows.append(answer_row(name, [got.get(i, "") for i in items], truth, list(LETTERS), group=group, rng=rng))
    return rows


def _pool_row(store: Any, runs: ViewRuns, agents: Sequence[str], alone: np.ndarray, truth: Sequence[str],
              group: Sequence[str], rng: np.random.Generator) -> list[AnswerRow]:
    """D-CEM's pool of the members' round-0 answers, confusions counted on the CAL run."""
    cal = store.outcomes(runs.cal)
    if cal.empty:
        return []
    cal_letters, _ = _round_answers(store.agent_distributions(runs.cal), agents, 0, list(cal["item_id"]))
    cal_truth = np.array([LETTERS.index(y) for y in cal["truth"]])
    pooled = pooled_letters(cal_letters, cal_truth, alone, list(LETTERS))
    return [answer_row("D-CEM pool of the members (CAL confusions)", pooled, truth, list(LETTERS), group=group, rng=rng)]


def _twin_rates(store: Any, runs: ViewRuns, base: Mapping[str, str]) -> dict[str, tuple[float, int]]:
    twins = store.outcomes(runs.twins)
    if twins.empty:
        return {}
    return {kind: cdr(base, {i: a for i, a in zip(twins["item_id"], twins["answer"]) if i.endswith(f"~{kind}")})
            for kind in ("sex", "age")}


def _cost(test: pd.DataFrame, single: pd.DataFrame) -> dict[str, float]:
    cost = {"seconds per item": float(test["seconds"].mean()),
            "tokens per item": float((test["prompt_tokens"] + test["completion_tokens"]).mean())}
    if not single.empty:
        cost["single seconds per item"] = float(single["seconds"].mean())
        cost["single tokens per item"] = float((single["prompt_tokens"] + single["completion_tokens"]).mean())
    return cost


def build_report(store: Any, cfg: GroupConfig, references: Mapping[str, Mapping[str, str]] | None = None,
                 *, rng: np.random.Generator | None = None, n_test: int = N_TEST, n_cal: int = N_CAL) -> ViewReport:
    """The measurement of ``cfg`` from ``store`` (see the module docstring)."""
    rng = rng or np.random.default_rng(0)
    runs, agents, labels = view_runs(cfg, n_test, n_cal), _reasoning(cfg), list(LETTERS)
    test = _need(store, runs.test, "the group on the TEST cases")
    items, truth, group = list(test["item_id"]), list(test["truth"]), list(test["answer"])
    frame = store.agent_distributions(runs.test)
    alone, alone_p = _round_answers(frame, agents, 0, items)
    after, after_p = _round_answers(frame, agents, 1, items)
    rows = [answer_row(f"{agent} alone ({cfg.view_of(agent)})", [labels[i] for i in alone[a]], truth, labels,
                       group=group, rng=rng) for a, agent in enumerate(agents)]
    rows.append(answer_row(VOTE_ROW, vote_letters(alone, alone_p, labels), truth, labels,
                           group=group, rng=rng))
    rows += _pool_row(store, runs, agents, alone, truth, group, rng)
    rows += [answer_row(f"{agent} after the debate", [labels[i] for i in after[a]], truth, labels, group=group,
                        rng=rng) for a, agent in enumerate(agents)]
    rows.append(answer_row(GROUP_ROW, group, truth, labels))
    rows += _stored_rows(store, runs, items, truth, group, rng)
    rows += [answer_row(name, [answers.get(i, "") for i in items], truth, labels, group=group, rng=rng)
             for name, answers in (references or {}).items()]
    # drawn last, so that adding this row left every other row's bootstrap interval as it was
    at = next(k for k, r in enumerate(rows) if r.name == GROUP_ROW)
    rows.insert(at, answer_row(AFTER_VOTE_ROW, vote_letters(after, after_p, labels), truth, labels, group=group,
                               rng=rng))
    changes = tuple(answer_changes(agent, [labels[i] for i in alone[a]], [labels[i] for i in after[a]], truth)
                    for a, agent in enumerate(agents))
    shares = pd.Series(truth).value_counts(normalize=True)
    return ViewReport(tuple(rows), 1.0 / len(LETTERS), (str(shares.index[0]), float(shares.iloc[0])), changes,
                      _twin_rates(store, runs, dict(zip(items, group))), chance_cdr(group),
                      _cost(test, store.outcomes(runs.single)), {a: str(cfg.view_of(a)) for a in agents})


def read_references(path: Path) -> dict[str, dict[str, str]]:
    """Reference answers from a JSON file ``{name: {item id: letter}}``; InputError otherwise."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError("references", f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise InputError("references", f"{path}: expected an object of names, each an object of item id -> letter")
    return {str(k): {str(i): str(a) for i, a in v.items()} for k, v in data.items()}


def _pct(x: float) -> str:
    return f"{x:.3f}"


def report_markdown(report: ViewReport) -> str:
    """The report as Markdown tables (REPRODUCTION.md's block)."""
    head = ("| answers | accuracy (95 % CI) | minus the group (95 % CI) | answered | most frequent answer | "
            "lowest recall | recall per diagnosis (" + ", ".join(DIAGNOSES) + ") |")
    lines = [head, "|" + "---|" * 7]
    for r in report.rows:
        diff = "" if r.diff is None else f"{r.diff:+.3f} ({r.diff_low:+.3f} to {r.diff_high:+.3f})"
        recall = " / ".join("-" if np.isnan(x) else f"{x:.2f}" for x in r.recall)
        worst = min(range(len(r.recall)), key=lambda k: (np.nan_to_num(r.recall[k], nan=2.0), k))
        lowest = f"{DIAGNOSES[worst]} {r.recall[worst]:.2f}" + (" (never diagnosed)" if r.recall[worst] == 0 else "")
        lines.append(f"| {r.name} | {_pct(r.accuracy)} ({_pct(r.low)} to {_pct(r.high)}) | {diff} | "
                     f"{r.answered if r.answered is not None else r.n} of {r.n} | {r.top_answer} on {r.top_share:.0%} | "
                     f"{lowest} | {recall} |")
    letter, share = report.best_letter
    lines += ["", f"Chance {report.chance:.3f}; the best single letter ({letter}) scores {share:.3f}.", "",
              "| member | wrong to right | right to wrong | wrong to another wrong | unchanged |", "|---|---|---|---|---|"]
    lines += [f"| {c.agent} ({report.views.get(c.agent, '')}) | {c.wrong_to_right} | {c.right_to_wrong} | "
              f"{c.wrong_to_wrong} | {c.kept} |" for c in report.changes]
    if report.cdr:
        lines += ["", "| twins | CDR | twins compared |", "|---|---|---|"]
        lines += [f"| {kind} | {rate:.3f} | {n} |" for kind, (rate, n) in report.cdr.items()]
        lines.append(f"\nTwo independent answers drawn from the group's own answer shares would differ "
                     f"{report.chance_cdr:.3f} of the time.")
    cost = report.cost
    lines += ["", f"Cost: {cost['seconds per item']:.2f} s and {cost['tokens per item']:.0f} tokens per item"]
    if "single seconds per item" in cost:
        lines[-1] += (f", against {cost['single seconds per item']:.2f} s and {cost['single tokens per item']:.0f} "
                      f"tokens for one single SmolLM2 answer ({cost['seconds per item'] / cost['single seconds per item']:.1f}x "
                      f"the seconds, {cost['tokens per item'] / cost['single tokens per item']:.1f}x the tokens).")
    from sag.views.goals import goals_markdown, view_goals

    lines += ["", "Goals, each as measured:", "", goals_markdown(view_goals(report, DIAGNOSES))]
    return "\n".join(lines)


def report_frame(report: ViewReport) -> pd.DataFrame:
    """The rows as a table for a page: accuracy and interval, the difference to the group,
    how many items were answered, the most frequent answer, and each diagnosis's recall."""
    rows = []
    for r in report.rows:
        row = {"answers": r.name, "accuracy": r.accuracy, "95 % interval": f"{r.low:.3f} to {r.high:.3f}",
               "minus the group": r.diff, "its 95 % interval": "" if r.diff is None else
               f"{r.diff_low:+.3f} to {r.diff_high:+.3f}", "answered": r.answered if r.answered is not None else r.n,
               "most frequent answer": f"{r.top_answer} on {r.top_share:.0%}"}
        row.update({f"recall {name}": value for name, value in zip(DIAGNOSES, r.recall)})
        row["never diagnosed"] = ", ".join(n for n, v in zip(DIAGNOSES, r.recall) if v == 0.0)
        rows.append(row)
    return pd.DataFrame(rows)
