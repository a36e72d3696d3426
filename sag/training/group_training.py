"""A group's debates as training rollouts: who answered what, from which prompt, for what reward.

:func:`play_rollouts` plays one item ``G`` times with the group through the runtime (the
same :func:`sag.debate.hybrid.play_debate` every run uses, with sampled answer letters: each
rollout has its own decoding seed) and turns each play into a
:class:`training.rollouts.Rollout`:

- **actions**: every answer turn of every agent (round 0 proposals, the flat debate
  step, the safety audit, the judges), with the prompt's token ids as the runtime
  rendered them, the options offered (the item's letters, and REFUSE for safety agents
  and judges) and the option the agent gave.  The option taken is
  read against the softmax over the offered options; the runtime decides REFUSE by a
  threshold on P(REFUSE) and draws a letter otherwise, so for refusable turns the
  sampling distribution and the trained policy differ slightly;
- **reward** (:func:`play_reward`, weights of :class:`training.config.RewardWeights`):
  accuracy +1 / -1 on a question; on a harmful request (MedSafetyBench) +1 for a
  refusal (answer B or REFUSE) and -5 for compliance, times the safety weight; and when
  the item has a demographic twin (:func:`twin_of`, the evaluation's gender swap) rollout
  g of the item and rollout g of its twin each lose the fairness weight when their
  answers differ;
- **rationales** (GRPO's optional rationale path, ``rationales=True``): every answer
  turn's generated rationale as a :class:`training.rollouts.Rationale`, its token ids as
  llama.cpp sampled them (at the play's temperature; a ``top_p`` below 1 is not
  modelled).  Too slow for a CPU at any useful scale: the path a GPU user takes;
- **state** (:func:`state_features`): what the central critic sees of the debate.

A failed model call is never an answer: a rollout with one is dropped and counted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from clinical.questions import QuestionItem
from clinical.safety_requests import DECLINE, HARMFUL_PREFIX
from sag.group.config import AgentRole, GroupConfig
from sag.debate.hybrid import Searcher, play_debate
from sag.debate.engine import AgentTurn, TurnEngine
from sag.group.failures import ItemFailed
from sag.group.transcript import REFUSE, GroupMessage
from training.config import RewardWeights
from training.rollouts import Action, Rationale, Rollout

__all__ = ["Tokenizer", "RecordingEngine", "PlayedRollout", "play_rollouts", "play_reward", "state_features",
           "state_size", "twin_of", "to_rollout", "adapter_names_for", "GROUP_METHODS"]

GROUP_METHODS = ("sag", "no_reasoning", "no_knowledge", "no_safety", "no_judge")
"""Group methods whose debates train (the D-CEM variant needs a calibrated panel; the
single agent trains with :mod:`sag.training.single_agent`; the majority vote has no debate)."""


class Tokenizer:
    """What the rollouts need from a llama.cpp backend: prompt token ids and option tokens."""

    def __init__(self, prompt_tokens: Callable[[list], list[int]], option_token: Callable[[str], int]) -> None:
        self.prompt_tokens, self.option_token = prompt_tokens, option_token
        self._options: dict[str, int] = {}

    def option(self, text: str) -> int:
        if text not in self._options:
            self._options[text] = self.option_token(text)
        return self._options[text]


class RecordingEngine(TurnEngine):
    """A :class:`TurnEngine` that keeps every played turn beside its message, and the token
    ids of its rationale (empty when the runner does not report them)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.played: list[tuple[AgentTurn, GroupMessage]] = []
        self.generated: list[tuple[int, ...]] = []
        self._ids: dict[int, tuple[int, ...]] = {}

    def _message(self, turn: AgentTurn, result: object, key: str, cached: bool, known: object) -> GroupMessage:
        message = super()._message(turn, result, key, cached, known)  # type: ignore[arg-type]
        self._ids[id(message)] = tuple(getattr(result, "completion_ids", ()))
        return message

    def play(self, turns: Sequence[AgentTurn], known_passages: object) -> list[GroupMessage]:  # type: ignore[override]
        got = super().play(turns, known_passages)  # type: ignore[arg-type]
        self.played.extend(zip(turns, got))
        self.generated.extend(self._ids.pop(id(m), ()) for m in got)
        return got


@dataclass(frozen=True)
class PlayedRollout:
    """One play before its reward is known: the item, the seed, the final answer, the
    played turns, the rounds used, and each played turn's rationale token ids."""

    item: QuestionItem
    seed: int
    answer: str
    played: tuple[tuple[AgentTurn, GroupMessage], ...]
    rounds: int
    generated: tuple[tuple[int, ...], ...] = ()


def adapter_names_for(method: str, cfg: GroupConfig) -> dict[AgentRole, str]:
    """The adapter of each role: one shared adapter (``default``) for GRPO, one per role
    present in the group (named after the role) for CTDE."""
    roles = [role for role, n in zip(AgentRole, cfg.role_counts()) if n]
    return {role: ("default" if method == "grpo" else role.value) for role in roles}


def twin_of(item: QuestionItem) -> QuestionItem | None:
    """The item with every gendered word swapped (the evaluation's counterfactual), or
    None when it has no such twin (no gendered word, a sex-specific term, a request)."""
    from dataclasses import replace

    from sag.evaluation.demographics import load_demographic_rules, swap_gender

    if item.benchmark not in ("medqa", "ddxplus8"):
        return None
    text = swap_gender(item.question, load_demographic_rules())
    if text is None or text == item.question:
        return None
    return replace(item, item_id=f"{item.item_id}#gender", question=text)


def play_rollouts(item: QuestionItem, cfg: GroupConfig, runners: Mapping[str, object],
                  retrievers: Mapping[str, Searcher], seeds: Sequence[int]) -> tuple[list[PlayedRollout], int]:
    """Play ``item`` once per seed (sampled letters, ``cfg.temperature`` > 0); returns the
    plays and how many failed (a failed play is dropped, never scored)."""
    if cfg.method not in GROUP_METHODS:
        raise ValueError(f"method {cfg.method!r} does not train as a group (choose {', '.join(GROUP_METHODS)})")
    plays, failed = [], 0
    for seed in seeds:
        rollout_cfg = cfg.with_changes(seed=int(seed))
        engine = RecordingEngine(runners, rollout_cfg)
        try:
            outcome = play_debate(item, rollout_cfg, engine, retrievers)
        except ItemFailed:
            failed += 1
            continue
        plays.append(PlayedRollout(item, int(seed), outcome.answer, tuple(engine.played), outcome.rounds,
                                   tuple(engine.generated)))
    return plays, failed


def play_reward(item: QuestionItem, answer: str, weights: RewardWeights) -> tuple[float, bool]:
    """The reward of a final answer and whether it is the right one (see the module docstring)."""
    if item.item_id.startswith(HARMFUL_PREFIX):
        refused = answer in (DECLINE, REFUSE)
        return weights.safety * (weights.refusal if refused else weights.compliance), refused
    right = answer == item.answer
    return weights.accuracy * (weights.correct if right else weights.wrong), right


def state_size(n_slots: int) -> int:
    return 4 * n_slots + 3


def _dense(message: GroupMessage, n_slots: int) -> np.ndarray:
    """A message's answer distribution over the slots: letters, REFUSE in the last slot."""
    out = np.zeros(n_slots)
    letters = np.asarray(message.distribution or (), dtype=float)
    refuse = message.refuse_probability or 0.0
    out[:letters.size] = letters * (1.0 - refuse)
    out[-1] = refuse
    return out


def state_features(play: PlayedRollout, cfg: GroupConfig, n_slots: int) -> tuple[float, ...]:
    """What the critic sees: the mean answer distribution of round 0's proposals, of the
    last round's flat step, of its safety audit and of its judges (each over the slots),
    the share of rounds used, the evidence passages found (per knowledge agent and round)
    and the share of letters the item offers."""
    messages = [m for _, m in play.played]
    last = play.rounds
    parts = []
    for chosen in ([m for m in messages if m.round == 0 and m.phase == "propose"],
                   [m for m in messages if m.round == last and m.phase == "debate"],
                   [m for m in messages if m.round == last and m.phase == "audit"],
                   [m for m in messages if m.round == last and m.phase == "judge"]):
        parts.append(np.mean([_dense(m, n_slots) for m in chosen], axis=0) if chosen else np.zeros(n_slots))
    knowledge = max(1, cfg.role_counts()[1])
    passages = {p for _, m in play.played for p, _ in (m.retrieved or ())}
    extra = [last / cfg.t_max, len(passages) / (knowledge * cfg.top_k * (last + 1)), len(play.item.options) / (n_slots - 1)]
    return tuple(float(v) for v in np.concatenate(parts + [np.asarray(extra)]))


def to_rollout(play: PlayedRollout, group: int, reward: float, right: bool, cfg: GroupConfig,
               tokenizer: Tokenizer, adapters: Mapping[AgentRole, str], n_slots: int, *,
               rationales: bool = False) -> Rollout:
    """The training view of a play (see the module docstring); ``n_slots`` = the most
    letters of any training item + 1 (REFUSE); ``rationales`` adds the answer turns'
    rationales (refused when the runner did not report their token ids)."""
    actions: list[Action] = []
    said: list[Rationale] = []
    last_of: dict[int, int] = {}
    generated = play.generated or ((),) * len(play.played)
    for (turn, message), ids in zip(play.played, generated):
        if message.answer is None or message.phase == "retrieve":
            continue
        options = turn.options
        slots = tuple(n_slots - 1 if o == REFUSE else turn.letters.index(o) for o in options)
        prompt = tuple(tokenizer.prompt_tokens(list(turn.messages)))
        actions.append(Action(adapters[turn.agent.role], prompt, tuple(tokenizer.option(o) for o in options), slots,
                              options.index(message.answer)))
        last_of[turn.index] = len(actions) - 1
        if rationales and message.rationale and not ids:
            raise ValueError(f"the runner of {turn.agent.model} reports no rationale token ids; rationale actions "
                             "need the llama.cpp runtime")
        if rationales and ids:
            said.append(Rationale(adapters[turn.agent.role], prompt, tuple(ids), cfg.temperature))
    agents = cfg.agents()
    missing = [agents[i].agent_id for i in range(len(agents)) if i not in last_of]
    if missing:
        raise ValueError(f"agents {', '.join(missing)} gave no answer in the play of {play.item.item_id}")
    finals = tuple(last_of[i] for i in range(len(agents)))
    return Rollout(group, tuple(actions), reward, right, finals, state_features(play, cfg, n_slots), tuple(said))
