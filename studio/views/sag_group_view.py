"""What the dashboard's Agent group page shows, computed from the SAG store (no Streamlit here).

The page picks a stored run and an item; this module turns the store's frames into the
run and item labels, the outcome line, the debate timeline (one lane per role, one
column per round, each cell the turns of that role in that round), the per-round answer
distributions as a tidy frame, the retrieved passages with their scores, the safety
flags, the judges' reasoning, the D-CEM mediator's rounds, and the comparison of two runs on
their common items (:mod:`studio.views.sag_launch` checks a run launched from the page).
The page only lays these out in widgets.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, TypeVar

import pandas as pd

from clinical.corpora import CORPORA, Passage, load_corpus
from common.errors import ConfigError, ProjectError
from sag.group.config import ROLES
from sag.runs.compare import RunComparison, compare_runs  # noqa: F401  (re-exported)
from sag.debate.turning import changed_items, turning_lines  # noqa: F401  (changed_items re-exported)
from sag.store.tables import SagStore
from sag.group.transcript import ESCALATE, REFUSE

__all__ = ["DISCLAIMER", "NO_RUN_HINT", "ROLE_TITLES", "DIST_COLUMNS", "PASSAGE_COLUMNS",
           "FLAG_COLUMNS", "JUDGE_COLUMNS", "MEDIATOR_COLUMNS", "COMPARE_COLUMNS", "Turn", "Lane", "Timeline",
           "Outcome", "ItemView", "RunComparison", "run_labels", "item_labels", "outcome_of", "timeline",
           "turn_markdown", "distributions", "passages", "passage_lookup", "safety_flags", "judge_reasoning",
           "mediator_table", "load_item_view", "compare_runs"]

DISCLAIMER = ("Research and teaching tool, not clinical advice. A group that answers REFUSE or ESCALATE "
              "hands the item to a human.")
NO_RUN_HINT = ("No Small Agent Group run is stored yet. Launch a small run above, or from a terminal: "
               "`python -m sag run --benchmark medqa --group sag-6 --items 20`. Or import the debates of the "
               "evaluation shipped with the project (below, or on the Group evaluation page).")
ROLE_TITLES = {"reasoning": "Reasoning agents (A_R)", "knowledge": "Knowledge agents (A_K)",
               "safety": "Safety agents (A_S)", "judge": "Synthesis and judge agents (A_J)"}
CORPUS_OF_PREFIX = {"mlp": "medlineplus", "pmq": "pubmedqa", "ddx": "ddxplus"}
DIST_COLUMNS = ("round", "agent", "role", "option", "probability")
PASSAGE_COLUMNS = ("passage_id", "corpus", "score", "round", "retrieved_by", "cited_by", "title", "text")
FLAG_COLUMNS = ("round", "agent", "flag")
JUDGE_COLUMNS = ("round", "judge", "answer", "probability", "says something new", "rationale")
NOT_STATED = "not stated"  # a judge whose reply carries no NEW: yes/no mark
MEDIATOR_COLUMNS = ("round", "action", "decision", "energy", "margin", "steer target")
COMPARE_COLUMNS = ("item_id", "truth", "answer A", "answer B", "correct A", "correct B", "rounds A", "rounds B")
_ROLE_ORDER = {role.value: n for n, role in enumerate(ROLES)}
_MD_SPECIAL = "\\`*_{}[]<>#|$~"

T = TypeVar("T")
PassageLookup = Callable[[Iterable[str]], Mapping[str, Passage]]


def _text(value: object) -> str | None:
    """A non-blank string, or None for a missing value (None, NaN, NA, "")."""
    return value if isinstance(value, str) and value.strip() else None


def _seq(value: object, cast: Callable[[object], T]) -> tuple[T, ...]:
    """The items of a stored list (list or array) cast to a type; () for a missing or bad value."""
    if value is None or isinstance(value, (str, float)):
        return ()
    try:
        return tuple(cast(v) for v in value)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return ()


def _missing(value: object) -> bool:
    """None, NA or NaN: a cell without a value."""
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _number(value: object) -> float | None:
    return None if _missing(value) else float(value)  # type: ignore[arg-type]


def _flag(value: object) -> bool | None:
    return None if _missing(value) else bool(value)


def _escape(text: str) -> str:
    """Plain text made safe for Markdown: special characters escaped, lines joined."""
    flat = " ".join(text.split())
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in flat)


def run_labels(runs: pd.DataFrame, *, answered_only: bool = True) -> dict[str, str]:
    """Run id -> "benchmark · group · method · answered/total answered · id" (newest first);
    runs without an answered item are left out unless ``answered_only`` is False."""
    out: dict[str, str] = {}
    for r in runs.itertuples(index=False):
        if answered_only and int(r.answered) == 0:
            continue
        digest = str(r.run_id).rsplit("-", 1)[-1]
        failed = int(getattr(r, "failed", 0) or 0)
        out[str(r.run_id)] = (f"{r.benchmark} · {r.group_name} · {r.method} · {int(r.answered)}/{int(r.items)} "
                              f"answered{f' ({failed} failed: no answer)' if failed else ''} · seed {int(r.seed)} "
                              f"· {digest}")
    return out


def item_labels(outcomes: pd.DataFrame) -> dict[str, str]:
    """Item id -> "item: answered X, truth Y (right / wrong / handed to a human)", in run order."""
    out: dict[str, str] = {}
    for r in outcomes.itertuples(index=False):
        verdict = "handed to a human" if r.answer in (REFUSE, ESCALATE) else ("right" if r.correct else "wrong")
        out[str(r.item_id)] = f"{r.item_id}: answered {r.answer}, truth {r.truth} ({verdict})"
    return out


@dataclass(frozen=True)
class Outcome:
    """An item's outcome: the group's answer, the truth, the rule that chose it, the rounds played."""

    answer: str
    truth: str
    correct: bool
    rule: str
    rounds: int
    stop_reason: str

    @property
    def handed_to_human(self) -> bool:
        return self.answer in (REFUSE, ESCALATE)

    @property
    def kind(self) -> str:
        """The Streamlit call that shows the line: warning (handed to a human), else info -- a
        right answer is stated, not celebrated (the packaged models answer at chance)."""
        return "warning" if self.handed_to_human else "info"

    @property
    def line(self) -> str:
        """One Markdown line saying what the group answered and why it stopped."""
        verdict = ("handed to a human" if self.handed_to_human else "correct" if self.correct else "not correct")
        why = f"; stopped because: {_escape(self.stop_reason)}" if self.stop_reason not in ("", self.rule) else ""
        return (f"The group answered **{self.answer}** (truth **{self.truth}**, {verdict}) by *{_escape(self.rule)}* "
                f"after {self.rounds} round(s){why}.")


def outcome_of(outcomes: pd.DataFrame, item_id: str) -> Outcome:
    """The outcome row of ``item_id``; ConfigError when the item has none."""
    rows = outcomes[outcomes["item_id"] == item_id]
    if rows.empty:
        raise ConfigError("item", f"no stored outcome for item {item_id!r}")
    r = rows.iloc[0]
    return Outcome(str(r["answer"]), str(r["truth"]), bool(r["correct"]), _text(r["rule"]) or "",
                   int(r["rounds"]), _text(r["stop_reason"]) or "")


@dataclass(frozen=True)
class Turn:
    """One agent turn (or a knowledge agent's search, phase ``retrieve``) as the timeline shows it."""

    round: int
    agent_id: str
    role: str
    phase: str
    answer: str | None
    max_probability: float | None
    rationale: str
    citations: tuple[str, ...] = ()
    unknown_citations: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    new: bool | None = None
    parse_note: str | None = None
    error: str | None = None
    challenge: str | None = None
    retrieved: tuple[tuple[str, float], ...] = ()
    read: str | None = None


@dataclass(frozen=True)
class Lane:
    """One role's row of the timeline: ``cells[i]`` are its turns in round ``rounds[i]``."""

    role: str
    title: str
    cells: tuple[tuple[Turn, ...], ...]

    @property
    def empty(self) -> bool:
        return not any(self.cells)


@dataclass(frozen=True)
class Timeline:
    """The debate as a grid: one lane per role, one column per round."""

    rounds: tuple[int, ...]
    lanes: tuple[Lane, ...]


def _retrieved(value: object) -> tuple[tuple[str, float], ...]:
    try:
        pairs = json.loads(value) if isinstance(value, str) else []
        return tuple((str(pid), float(score)) for pid, score in pairs)
    except (ValueError, TypeError):
        return ()


def _turn(r: Mapping[str, object], reads: Mapping[str, str] | None = None) -> Turn:
    dist = _seq(r["distribution"], float)
    return Turn(int(r["round"]), str(r["agent_id"]), str(r["role"]), str(r["phase"]), _text(r["answer"]),
                max(dist) if dist else None, _text(r["rationale"]) or "", _seq(r["citations"], str),
                _seq(r["unknown_citations"], str), _seq(r["flags"], str), _flag(r["new_substance"]),
                _text(r["parse_note"]), _text(r["error"]), _text(r["note"]), _retrieved(r["retrieved_json"]),
                (reads or {}).get(str(r["agent_id"])))


def timeline(messages: pd.DataFrame, reads: Mapping[str, str] | None = None) -> Timeline:
    """The item's messages as lanes (reasoning, knowledge, safety, judge) by rounds; ``reads``:
    what each member of a view group read (agent id -> words)."""
    turns = [_turn(r, reads or {}) for r in messages.to_dict("records")]
    rounds = tuple(sorted({turn.round for turn in turns}))
    by_cell: dict[tuple[str, int], list[Turn]] = {}
    for turn in turns:
        by_cell.setdefault((turn.role, turn.round), []).append(turn)
    lanes = tuple(Lane(role.value, ROLE_TITLES[role.value],
                       tuple(tuple(by_cell.get((role.value, t), ())) for t in rounds)) for role in ROLES)
    return Timeline(rounds, lanes)


def turn_markdown(turn: Turn) -> str:
    """A turn as a few Markdown lines: who answered what with which probability, the
    rationale, citations, flags, the NEW mark, and any parse note, error or challenge."""
    if turn.phase == "retrieve":
        found = ", ".join(f"{pid} ({score:.1f})" for pid, score in turn.retrieved) or "nothing"
        return f"**{turn.agent_id}** searched: {_escape(found)}"
    head = f"**{turn.agent_id}**" + (f" (read: {_escape(turn.read)})" if turn.read else "")
    head += f" → **{turn.answer or 'no answer'}**"
    if turn.max_probability is not None:
        head += f" (max p {turn.max_probability:.2f})"
    if turn.new is not None:
        head += " · NEW: yes" if turn.new else " · NEW: no"
    lines = [head]
    if turn.challenge:
        lines.append(f":orange[challenge received: {_escape(turn.challenge)}]")
    if turn.rationale:
        lines.append(f"_{_escape(turn.rationale)}_")
    if turn.citations:
        lines.append("cites: " + _escape(", ".join(turn.citations)))
    if turn.unknown_citations:
        lines.append("cites outside the pool: " + _escape(", ".join(turn.unknown_citations)))
    lines.extend(f":red[FLAG: {_escape(flag)}]" for flag in turn.flags)
    if turn.parse_note:
        lines.append(f":gray[parse note: {_escape(turn.parse_note)}]")
    if turn.error:
        lines.append(f":red[error: {_escape(turn.error)}]")
    return "  \n".join(lines)


def distributions(messages: pd.DataFrame, letters: tuple[str, ...]) -> pd.DataFrame:
    """Every scored turn's probabilities as tidy rows (round, agent, role, option, probability)."""
    rows = []
    for r in messages.to_dict("records"):
        dist = _seq(r["distribution"], float)
        if r["phase"] == "retrieve" or len(dist) != len(letters):
            continue
        rows.extend([int(r["round"]), r["agent_id"], r["role"], letter, p] for letter, p in zip(letters, dist))
    frame = pd.DataFrame(rows, columns=list(DIST_COLUMNS))
    if frame.empty:
        return frame
    key = [(_ROLE_ORDER.get(role, 9), len(agent), agent) for agent, role in zip(frame["agent"], frame["role"])]
    return frame.assign(_k=key).sort_values(["round", "_k", "option"], kind="stable").drop(columns="_k") \
        .reset_index(drop=True)


def passage_lookup(ids: Iterable[str]) -> dict[str, Passage]:
    """The shipped passages with these ids (a corpus that cannot be read is skipped)."""
    wanted = set(ids)
    out: dict[str, Passage] = {}
    for corpus in sorted({CORPUS_OF_PREFIX.get(pid.split("-", 1)[0]) for pid in wanted} & set(CORPORA)):
        try:
            out.update({p.passage_id: p for p in load_corpus(corpus) if p.passage_id in wanted})
        except (ProjectError, OSError):
            continue
    return out


def passages(messages: pd.DataFrame, *, lookup: PassageLookup = passage_lookup) -> pd.DataFrame:
    """Each retrieved passage of each search: id, corpus, BM25 score, round, who searched,
    who cited it in the debate, and its title and text when the corpus is available."""
    cited: dict[str, list[str]] = {}
    rows = []
    for r in messages.to_dict("records"):
        for pid in _seq(r["citations"], str):
            cited.setdefault(pid, []).append(str(r["agent_id"]))
        if r["phase"] == "retrieve":
            rows.extend([pid, CORPUS_OF_PREFIX.get(pid.split("-", 1)[0], ""), score, int(r["round"]), r["agent_id"]]
                        for pid, score in _retrieved(r["retrieved_json"]))
    found = lookup({row[0] for row in rows}) if rows else {}
    full = [row + [", ".join(dict.fromkeys(cited.get(row[0], []))), found[row[0]].title if row[0] in found else "",
                   found[row[0]].text if row[0] in found else ""] for row in rows]
    return pd.DataFrame(full, columns=list(PASSAGE_COLUMNS))


def safety_flags(messages: pd.DataFrame) -> pd.DataFrame:
    """Every flag raised in the debate: round, agent, flag."""
    rows = [[int(r["round"]), r["agent_id"], flag] for r in messages.to_dict("records")
            for flag in _seq(r["flags"], str)]
    return pd.DataFrame(rows, columns=list(FLAG_COLUMNS))


def judge_reasoning(messages: pd.DataFrame) -> pd.DataFrame:
    """The judges' turns: round, judge, answer, its probability, NEW mark, rationale."""
    rows = []
    for r in messages.to_dict("records"):
        if r["role"] != "judge":
            continue
        turn = _turn(r)
        new = NOT_STATED if turn.new is None else ("yes" if turn.new else "no")
        rows.append([int(r["round"]), turn.agent_id, turn.answer, turn.max_probability, new, turn.rationale])
    return pd.DataFrame(rows, columns=list(JUDGE_COLUMNS))


def mediator_table(rounds: pd.DataFrame) -> pd.DataFrame:
    """The D-CEM mediator's rounds: round, action, decision, energy, margin, steer target."""
    rows = []
    for r in rounds.to_dict("records"):
        agent, alternative = _text(r["steer_agent"]), _text(r["steer_alternative"])
        target = f"{agent} → {alternative}" if agent and alternative else ""
        rows.append([int(r["round"]), r["action"], r["decision"], _number(r["energy"]), _number(r["margin"]), target])
    return pd.DataFrame(rows, columns=list(MEDIATOR_COLUMNS))


@dataclass(frozen=True, eq=False)
class ItemView:
    """Everything the page shows for one item of one run."""

    run_id: str
    item_id: str
    method: str
    question: str
    options: tuple[tuple[str, str], ...]
    outcome: Outcome
    timeline: Timeline
    distributions: pd.DataFrame
    passages: pd.DataFrame
    flags: pd.DataFrame
    judges: pd.DataFrame
    mediator: pd.DataFrame
    readings: tuple[tuple[str, str, str], ...] = ()
    turning: tuple[str, ...] = ()

    @property
    def letters(self) -> tuple[str, ...]:
        return tuple(letter for letter, _ in self.options)

    @property
    def dcem(self) -> bool:
        return self.method == "dcem"

    @property
    def question_markdown(self) -> str:
        options = "  \n".join(f"**{letter}.** {_escape(text)}" for letter, text in self.options)
        return f"{_escape(self.question)}\n\n{options}"


def load_item_view(store: SagStore, run_id: str, item_id: str, *,
                   lookup: PassageLookup = passage_lookup) -> ItemView:
    """One item of one run, read from the store; ConfigError for an item without outcome."""
    outcomes = store.outcomes(run_id)
    outcome = outcome_of(outcomes, item_id)
    method = str(outcomes["method"].iloc[0])
    items = store.items(run_id)
    row = items[items["item_id"] == item_id].iloc[0]
    options = tuple((str(letter), str(text)) for letter, text in json.loads(row["options_json"]))
    messages = store.messages(run_id, item_id)
    readings, reads = _readings(store, run_id, item_id)
    letters = tuple(letter for letter, _ in options)
    mediator = mediator_table(store.mediator_rounds(run_id, item_id)) if method == "dcem" \
        else pd.DataFrame(columns=list(MEDIATOR_COLUMNS))
    return ItemView(run_id, item_id, method, str(row["question"]), options, outcome, timeline(messages, reads),
                    distributions(messages, letters), passages(messages, lookup=lookup), safety_flags(messages),
                    judge_reasoning(messages), mediator, readings, tuple(turning_lines(messages, reads)))


def _readings(store: SagStore, run_id: str, item_id: str) -> tuple[tuple[tuple[str, str, str], ...], dict[str, str]]:
    """((agent, what it read in words, the text it read), ...) and agent -> words, for a view
    group's item; empty for other groups."""
    from sag.debate.turning import member_reads
    from sag.group.member_views import case_reading

    config = store.run_config(run_id)
    reads = member_reads(config)
    if not reads:
        return (), {}
    try:
        texts = tuple((a, reads[a], case_reading(item_id, str(config.view_of(a)))) for a in reads)
    except ProjectError:  # not a DDXPlus-8 case after all: the lanes still say what each read
        texts = ()
    return texts, reads
