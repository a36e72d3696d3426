"""How a debate turned: which member changed its answer, and after whose message (the
Agent group page's view of a view group, no Streamlit here).

A reasoning agent changed when its answer in a round differs from its answer in the round
before.  The message it followed is each other reasoning agent that, in that earlier
round, gave the answer it changed to.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

__all__ = ["changed_items", "turning_lines", "member_reads", "messages_frame"]


def _reasoning(answers: pd.DataFrame) -> pd.DataFrame:
    return answers[(answers["role"] == "reasoning") & (answers["phase"] != "retrieve")]


def changed_items(answers: pd.DataFrame) -> set[str]:
    """Items (of :meth:`SagStore.agent_answers`) in which a reasoning agent changed its answer."""
    got = _reasoning(answers).sort_values(["item_id", "agent_id", "round"])
    if got.empty:
        return set()
    moved = got.groupby(["item_id", "agent_id"])["answer"].transform(lambda s: s.ne(s.shift()) & s.shift().notna())
    return set(got.loc[moved.astype(bool), "item_id"])


def turning_lines(messages: pd.DataFrame, reads: Mapping[str, str] | None = None) -> list[str]:
    """One line per change of one item's debate (its messages), in round order:
    "R1 (read the chief complaint) changed F to E in round 1, after R2 said E in round 0 (p 0.71)"."""
    reads = reads or {}
    got = _reasoning(messages)
    by = {(str(r.agent_id), int(r.round)): r for r in got.itertuples(index=False)}
    lines = []
    for (agent, t), row in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        before = by.get((agent, t - 1))
        if before is None or before.answer == row.answer:
            continue
        who = agent + (f" (read {reads[agent]})" if agent in reads else "")
        followed = []
        for (other, rnd), said in sorted(by.items()):
            if rnd == t - 1 and other != agent and said.answer == row.answer:
                dist = [float(x) for x in said.distribution] if said.distribution is not None else []
                followed.append(f"{other} said {row.answer} in round {t - 1}"
                                + (f" (p {max(dist):.2f})" if dist else ""))
        after = ", after " + " and ".join(followed) if followed else ", no other member had said it"
        lines.append(f"{who} changed {before.answer} to {row.answer} in round {t}{after}.")
    return lines


def member_reads(config: object) -> dict[str, str]:
    """Agent id -> what it read, in words, for a view group's config (empty otherwise)."""
    from sag.group.member_views import reads

    views = getattr(config, "views", ())
    agents = getattr(config, "agents", lambda: ())()
    if not views:
        return {}
    return {a.agent_id: reads(v) for a in agents if (v := config.view_of(a.agent_id)) is not None}  # type: ignore[attr-defined]


def messages_frame(messages: Sequence[Any]) -> pd.DataFrame:
    """Played :class:`~sag.group.transcript.GroupMessage` turns as the frame :func:`turning_lines` reads."""
    return pd.DataFrame([{"agent_id": m.agent_id, "round": m.round, "role": m.role.value, "phase": m.phase,
                          "answer": m.answer, "distribution": tuple(m.distribution)} for m in messages],
                        columns=["agent_id", "round", "role", "phase", "answer", "distribution"])
