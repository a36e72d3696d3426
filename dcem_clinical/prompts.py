"""Prompt text for the diagnostic agents (our own wording; Appendix G gives the roles).

Every prompt is built by a pure function from its inputs, so a prompt and therefore a
cache key is reproducible.  Labelled examples appear only when the retrieval few-shot
option is on (:mod:`dcem_clinical.few_shot`): then the user turn shows solved CAL cases
of the same seed with their true category before the case.  The system turn names the
panel's size in words ("one of three agents"); a two-agent panel's text is the one its
shipped call logs were cached under.  Nothing here asks for or gives treatment advice.

Two layouts (:data:`LAYOUTS`).  ``agent-first`` (the default, the one every shipped run
used) names the agent and its role in the system turn, so two agents' prompts for a case
differ from the fourth token on.  ``case-first`` keeps the system turn the same for every
agent of a panel and names the agent and its role in the user turn, after the case and
before the mediator's note: two agents on one model then share the prompt up to the end
of the case, and a model that keeps saved KV states (:mod:`runtime.kv_cache`) evaluates a
case once for both.
"""
from __future__ import annotations

from typing import Sequence

from common.errors import ConfigError
from common.fields import Whole, bare, check
from runtime.messages import Message, Role

__all__ = ["letters", "number_word", "system_prompt", "MAX_AGENTS", "case_prompt", "examples_block",
           "continue_note", "steer_note", "cue_request", "peer_note", "ROLE_NEUTRAL", "LAYOUTS",
           "AGENT_FIRST", "CASE_FIRST", "agent_part", "check_layout"]

ROLE_NEUTRAL = "You are an experienced senior clinician with no preferred diagnosis."
AGENT_FIRST, CASE_FIRST = "agent-first", "case-first"
LAYOUTS = (AGENT_FIRST, CASE_FIRST)


def check_layout(layout: object) -> str:
    """``layout`` if it is one of :data:`LAYOUTS`, else a ConfigError (field ``layout``) naming them."""
    if layout not in LAYOUTS:
        raise ConfigError("layout", f"the prompt layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    return str(layout)


def letters(n: int) -> list[str]:
    """Option letters A, B, C ... for n labels (at most 26)."""
    if not 1 <= n <= 26:
        raise ValueError(f"between 1 and 26 labels can be lettered, got {n}")
    return [chr(ord("A") + i) for i in range(n)]


_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
          "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
MAX_AGENTS = 26  # one letter per agent (Agent A ... Agent Z)


_PANEL_SIZE = Whole(2, MAX_AGENTS, msg="a panel has 2 to {high} agents, got {value!r}")


def number_word(n: int) -> str:
    """``n`` in words, 0 to 99 ("two", "three", ..., "twenty-six")."""
    check("n", n, Whole(0, 99, msg="a whole number between 0 and 99 is needed, got {value!r}"), error=bare(ValueError))
    if n < 20:
        return _UNITS[n]
    tens = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")[n // 10 - 2]
    return tens if n % 10 == 0 else f"{tens}-{_UNITS[n % 10]}"


def system_prompt(agent_name: str, role: str, *, n_agents: int = 2, layout: str = AGENT_FIRST) -> str:
    """The agent's system turn: "one of N agents" with N in words (2 to 26).

    ``agent-first``: the agent's name and role are in it; the two-agent text is the one
    every shipped call log was cached under, it must not change.  ``case-first``: the same
    text for every agent of the panel (its name and role follow the case, :func:`agent_part`).
    """
    check("n_agents", n_agents, _PANEL_SIZE, error=bare(ValueError))
    rules = ("Pick exactly one category from the list you are given, never invent a new one, and be honest "
             "when the case is unclear. Do not give treatment advice.")
    if check_layout(layout) == CASE_FIRST:
        return (f"You are one of {number_word(n_agents)} agents sorting clinical cases into a fixed set of "
                f"categories for a research study. Your name and your role follow each case. {rules}")
    return (f"You are {agent_name}, one of {number_word(n_agents)} agents sorting clinical cases into a fixed "
            f"set of categories for a research study. {role} {rules}")


def agent_part(agent_name: str, role: str) -> str:
    """The ``case-first`` layout's paragraph after the case: who answers, in which role."""
    return f"You are {agent_name}. {role}".strip()


def examples_block(labels: Sequence[str], examples: Sequence[tuple[str, int]]) -> str:
    """Solved cases shown before the case: (text, true label index) each, in the given order."""
    tags = letters(len(labels))
    shown = [f"Solved example {i}:\n{text.strip()}\nCorrect category: {tags[label]}. {labels[label]}"
             for i, (text, label) in enumerate(examples, start=1)]
    return "Solved examples (earlier cases with their correct category):\n\n" + "\n\n".join(shown)


def case_prompt(labels: Sequence[str], case_text: str, note: str | None = None, *,
                answer_format: str = "letter", examples: Sequence[tuple[str, int]] = (),
                agent: str | None = None) -> str:
    """The user turn: the lettered label list, solved examples (if any), the case, the
    agent's paragraph (``case-first`` layout), the mediator note (round 2 on).

    answer_format "letter" ends with a request for one letter (scored mode); "json" asks
    for the JSON object of the structured mode.  ``examples`` are (text, true label
    index) pairs shown by :func:`examples_block`; none gives the zero-shot prompt.
    ``agent`` is :func:`agent_part`'s paragraph; None (``agent-first``) leaves it out.
    """
    options = "\n".join(f"{letter}. {label}" for letter, label in zip(letters(len(labels)), labels))
    parts = [f"Categories:\n{options}"]
    if examples:
        parts.append(examples_block(labels, examples))
    parts.append(f"Case:\n{case_text.strip()}")
    if agent:
        parts.append(agent.strip())
    if note:
        parts.append(f"Note from the mediator:\n{note.strip()}")
    if answer_format == "json":
        parts.append('Answer with JSON only: {"predicted_label": one category name, '
                     '"probabilities": {each category name: a number between 0 and 1}}.')
    else:
        parts.append("Answer with the letter of the single best category.")
    return "\n\n".join(parts)


def continue_note(top1: str, top2: str) -> str:
    """Sent with CONTINUE: look again without being told what to change."""
    return (f"Last round you ranked {top1} first and {top2} second. Read the case once more and "
            "check whether another category fits the findings better; keep your answer if it still does.")


def peer_note(peer_answers: Sequence[str]) -> str:
    """Free discussion: the other agents' answers of the previous round, nothing more."""
    said = ", ".join(peer_answers) if peer_answers else "nothing"
    return (f"The other agent answered {said} last round. Think about whether that changes your view, "
            "then give your own answer.")


def steer_note(current: str, alternative: str, cues: Sequence[str]) -> str:
    """Sent with DIFFERENTIAL_STEER: the agent's own cues separating the two categories."""
    cue_text = "; ".join(cues) if cues else "the findings that separate them"
    return (f"You answered {current}. In past cases your {current} answers sometimes turned out to be "
            f"{alternative}, which is a costlier miss. Weigh the cues you listed yourself: {cue_text}. "
            f"If the case shows the cues of {alternative}, move towards it; if not, keep {current}. "
            "Choose only from the categories given.")


def cue_request(labels_pair: tuple[str, str], case_text: str, agent_name: str, role: str, *,
                n_agents: int = 2, labels: Sequence[str] = (), layout: str = AGENT_FIRST) -> list[Message]:
    """A separate call in which the targeted agent (of a panel of ``n_agents``) lists cues
    separating two categories.  With ``labels`` the user turn starts with the category
    list and the case (and, ``case-first``, the agent's paragraph) exactly as the agent's
    zero-shot classification prompt does, so a model that keeps the KV state of that
    prompt evaluates only the question."""
    current, alternative = labels_pair
    agent = agent_part(agent_name, role) if check_layout(layout) == CASE_FIRST else None
    if labels:
        head = case_prompt(labels, case_text, agent=agent).rsplit("\n\n", 1)[0]
    else:
        head = "\n\n".join([f"Case:\n{case_text.strip()}"] + ([agent] if agent else []))
    return [Message(Role.SYSTEM, system_prompt(agent_name, role, n_agents=n_agents, layout=layout)),
            Message(Role.USER, f"{head}\n\nList up to three short findings that would "
                               f"tell {current} apart from {alternative}, one per line, no explanations.")]
