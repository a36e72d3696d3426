"""Will each case fit a member's context?  Checked before a run on a case file starts.

A member's prompt holds the case (or the member's view of it) and around it the system
turn with the longest role of the panel, the lettered label list, a mediator note with
three cues of the longest length an agent may give, and the answer.  That frame is
tokenised with the member's own tokenizer (llama.cpp, vocabulary only: no weights are
loaded), and a case whose text takes more tokens than the context leaves it is named.
A member on an ``openai:`` server has no local tokenizer and is not checked here (a case
too long for the server is a failed call, shown as such).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from clinical.datasets import ClinicalDataset
from common.errors import ConfigError
from dcem_clinical.agent import MAX_CUE_CHARS, MAX_CUES
from dcem_clinical.prompts import case_prompt, steer_note, system_prompt
from dcem_clinical.roles import scenario_roles
from dcem_clinical.stat_agent import is_stat_key
from dcem_clinical.stat_views import case_view_text, split_view

__all__ = ["ANSWER_TOKENS", "TooLong", "prompt_frame", "long_cases", "check_case_lengths"]

ANSWER_TOKENS = 160
"""Room kept for the chat template's markers and the reply (a JSON answer over the labels)."""


_CUE = "pain that moves to the right side with fever, worse on walking, and a raised count in the blood; "
"""Words of the length of the longest cue an agent may give (its tokens as a real cue's)."""


@dataclass(frozen=True)
class TooLong:
    member: str
    budget: int
    frame: int
    ids: tuple[str, ...]
    longest: int

    def message(self, n_ctx: int) -> str:
        shown = ", ".join(self.ids[:3]) + (" ..." if len(self.ids) > 3 else "")
        return (f"{len(self.ids)} case{'s are' if len(self.ids) > 1 else ' is'} longer than {self.member} can read "
                f"in a {n_ctx:,}-token context ({self.budget:,} tokens for the case after the prompt's "
                f"{self.frame:,}; longest {self.longest:,}): {shown}; raise --n-ctx or shorten them")


def prompt_frame(dataset: ClinicalDataset, scenarios: Sequence[str], n_agents: int) -> str:
    """The widest prompt around an empty case the panel's members may get."""
    roles = [r for s in scenarios for r in scenario_roles(dataset.name, s, n_agents)]
    role = max(roles, key=len)
    labels = dataset.labels
    cue = (_CUE * (MAX_CUE_CHARS // len(_CUE) + 1))[:MAX_CUE_CHARS]
    note = steer_note(max(labels, key=len), max(labels, key=len), [cue] * MAX_CUES)
    return system_prompt("Agent A", role, n_agents=n_agents) + "\n" + case_prompt(labels, "", note,
                                                                                  answer_format="json")


def long_cases(texts: dict[str, str], count: Callable[[str], int], budget: int) -> tuple[tuple[str, ...], int]:
    """(ids of the texts over ``budget`` tokens, the longest text's tokens)."""
    sizes = {case_id: count(text) for case_id, text in texts.items()}
    return tuple(i for i, n in sizes.items() if n > budget), max(sizes.values(), default=0)


def _llama_counter(model_key: str) -> Callable[[str], int]:
    from llama_cpp import Llama

    from runtime.registry import resolve

    path = str(resolve(model_key))
    try:  # llama.cpp prints a context warning even when asked to be quiet
        from llama_cpp._utils import suppress_stdout_stderr
    except ImportError:  # pragma: no cover - another llama-cpp-python layout
        from contextlib import nullcontext as suppress_stdout_stderr  # type: ignore[assignment]
    with suppress_stdout_stderr(disable=False):  # type: ignore[call-arg]
        vocab = Llama(model_path=path, vocab_only=True, verbose=False)
    return lambda text: len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def check_case_lengths(dataset: ClinicalDataset, agents: Sequence[str], scenarios: Sequence[str], n_ctx: int,
                       counter: Callable[[str], Callable[[str], int]] | None = None) -> None:
    """Refuse (ConfigError, field ``case_file``) a case too long for a local LLM member's
    context; ``counter(model key)`` gives that model's token count of a text (default: its
    llama.cpp vocabulary)."""
    counter = counter or _llama_counter
    frame = prompt_frame(dataset, scenarios, len(agents))
    counters: dict[str, Callable[[str], int]] = {}
    for key in agents:
        if is_stat_key(key):
            continue
        model, view = split_view(key, dataset.name)
        if model.startswith("openai:"):
            continue
        if model not in counters:
            counters[model] = counter(model)
        count = counters[model]
        used = count(frame) + ANSWER_TOKENS
        budget = n_ctx - used
        texts = {c.source_id: case_view_text(dataset.name, view, c) for c in dataset.cases
                 if c.source_id not in dataset.train_ids}
        ids, longest = long_cases(texts, count, budget)
        if ids:
            raise ConfigError("case_file", TooLong(key, budget, used, ids, longest).message(n_ctx))
