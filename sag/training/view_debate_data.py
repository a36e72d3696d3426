"""The later stages' training items of a view group: debates played up to the turn trained.

Stage ``debate``: round 0 is played in llama.cpp by the members as they are (each on its
view, greedy), then each reasoning agent's round-1 turn (the transcript of round 0, what
it read, its instruction) is an item of that agent.  Stage ``judge``: round 0 and the
round-1 steps before the judge are played, then the judge's turn (the whole debate, no
case) is an item over the letters and REFUSE.  The prompts are the runtime's own token
ids, so an adapter trained on them meets the same tokens when the group plays.

A played fold is cached as JSON in the run's folder (``played-<fold>.json``: each item's
prompts per agent, and each agent's round-0 answer), since playing it takes minutes to
hours; a fold stopped part-way resumes from ``played-<fold>.partial.json``.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from clinical.questions import QuestionItem
from sag.group.config import AgentRole, GroupConfig
from sag.debate.hybrid import Debate, debate_round, propose_step
from sag.debate.engine import TurnEngine
from sag.group.transcript import REFUSE
from training.config import RewardWeights
from training.letter_task import LetterItems

__all__ = ["Played", "play_fold", "turn_items", "played_hash"]


class Played:
    """One fold as played: per item, the trained turn's token ids per agent and the round-0
    letters of the reasoning agents."""

    def __init__(self, ids: Sequence[str], prompts: Mapping[str, Sequence[Sequence[int]]],
                 round0: Mapping[str, Sequence[str]]) -> None:
        self.ids, self.prompts, self.round0 = tuple(ids), dict(prompts), dict(round0)

    def to_json(self) -> str:
        return json.dumps({"ids": self.ids, "prompts": {a: [list(p) for p in ps] for a, ps in self.prompts.items()},
                           "round0": self.round0})

    @classmethod
    def from_json(cls, text: str) -> "Played":
        data = json.loads(text)
        return cls(data["ids"], {a: [tuple(p) for p in ps] for a, ps in data["prompts"].items()}, data["round0"])


def _turn_prompts(debate: Debate, stage: str) -> dict[str, Any]:
    """The messages of the turns the stage trains, by agent id, on the debate as played so far."""
    if stage == "debate":
        return {a.agent_id: debate.turn(i, a, 1, "debate").messages for i, a in debate.of_role(AgentRole.REASONING)}
    return {a.agent_id: debate.turn(i, a, 1, "judge").messages for i, a in debate.of_role(AgentRole.JUDGE)}


def _partial(cache: Path) -> Path:
    return cache.with_name(f"{cache.stem}.partial.json")


def _resumed(cache: Path | None, ids: tuple[str, ...]) -> Played | None:
    """The items played before a stop, when ``cache``'s partial file holds a prefix of ``ids``."""
    if cache is None or not _partial(cache).is_file():
        return None
    try:
        played = Played.from_json(_partial(cache).read_text(encoding="utf-8"))
    except (ValueError, KeyError, TypeError):
        return None
    return played if ids[:len(played.ids)] == played.ids else None


def _write(path: Path, played: Played) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(played.to_json(), encoding="utf-8")
    tmp.replace(path)


def play_fold(cfg: GroupConfig, items: Sequence[QuestionItem], runners: Mapping[str, Any], tokenize: Any,
              stage: str, cache: Path | None = None, *, save_every: int = 10) -> Played:
    """Play ``items`` up to the turns ``stage`` (``debate`` or ``judge``) trains (see the
    module docstring); read from ``cache`` when it holds this play.  Every ``save_every``
    items the play so far goes to ``<cache>.partial.json``, and a later call resumes from
    it, so a stop loses at most that many items."""
    ids = tuple(it.item_id for it in items)
    if cache is not None and cache.is_file():
        played = Played.from_json(cache.read_text(encoding="utf-8"))
        if played.ids == ids:
            return played
    before = _resumed(cache, ids)
    done = list(before.ids) if before else []
    prompts: dict[str, list[tuple[int, ...]]] = {a: list(p) for a, p in before.prompts.items()} if before else {}
    round0: dict[str, list[str]] = {a: list(r) for a, r in before.round0.items()} if before else {}
    engine = TurnEngine(runners, cfg)
    for item in items[len(done):]:
        debate = Debate(item, cfg, engine, {})
        propose_step(debate)
        for m in debate.round_messages(0):
            if m.role is AgentRole.REASONING:
                round0.setdefault(m.agent_id, []).append(m.answer or "")
        if stage == "judge":
            debate_round(debate, 1, {}, until="judge")
        for agent_id, messages in _turn_prompts(debate, stage).items():
            prompts.setdefault(agent_id, []).append(tuple(tokenize(list(messages))))
        done.append(item.item_id)
        if cache is not None and len(done) % save_every == 0 and len(done) < len(items):
            _write(_partial(cache), Played(done, prompts, round0))
    played = Played(done, prompts, round0)
    if cache is not None:
        _write(cache, played)
        _partial(cache).unlink(missing_ok=True)
    return played


def turn_items(played: Played, agent_id: str, items: Sequence[QuestionItem], option_token: Any, *,
               rewards: RewardWeights, refusable: bool = False) -> LetterItems:
    """One agent's played turns as items over the letters (and REFUSE when ``refusable``),
    rewarded +1 right and -1 wrong (REFUSE is wrong on a diagnosis)."""
    names = tuple(letter for letter, _ in items[0].options) + ((REFUSE,) if refusable else ())
    right = np.array([names.index(it.answer) for it in items])
    table = np.full((len(items), len(names)), rewards.wrong * rewards.accuracy)
    table[np.arange(len(items)), right] = rewards.correct * rewards.accuracy
    return LetterItems(tuple(it.item_id for it in items), tuple(played.prompts[agent_id]),
                       tuple(option_token(n) for n in names), names, table, right)


def played_hash(played: Played, items: Sequence[QuestionItem]) -> str:
    """sha256 over the played prompts and the items' answers (what the stage learns from)."""
    digest = hashlib.sha256()
    for index, item in enumerate(items):
        digest.update(f"{item.item_id}\t{item.answer}".encode("utf-8"))
        for agent_id in sorted(played.prompts):
            digest.update(repr(played.prompts[agent_id][index]).encode("utf-8"))
    return digest.hexdigest()
