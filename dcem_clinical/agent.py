"""A diagnostic agent: one language model that returns a label and a probability vector.

Two modes:

- ``scored``: the labels are offered as letters and the model's next-token distribution
  over the letters, renormalised, is the probability vector (one forward pass).  The
  label is the most probable letter, so it is always in the label set.
- ``json``: JSON-schema-constrained generation of ``{"predicted_label", "probabilities"}``
  (Appendix G).  The numbers are whatever the model writes: negative or missing values
  count as 0 and the vector is renormalised; a reply without any number puts all mass on
  its stated label.  If the reply cannot be parsed (not JSON,
  too deeply nested, a label outside the set, or numbers whose total is zero or not
  finite), the call falls back to the scored mode and the error is recorded in the report
  (and counted in the results; a reply with an error never answers from the cache); a
  label outside the set is impossible because the schema enumerates the labels and the
  fallback can only pick a letter.

- ``scored-calibrated``: the scored answer divided by the agent's content-free
  distribution and renormalised (contextual calibration, :mod:`dcem_clinical.contextual`);
  the distribution is fitted on first use (or given) and kept in :attr:`content_free`.

With a :class:`~dcem_clinical.few_shot.FewShot` the prompt also shows the most similar
solved CAL cases with their labels (never the case itself); the examples shown are
reported in ``extra["examples"]`` (ids, ranks, scores, truncation).

In every mode a next-token distribution that is not a finite, positive vector (NaN
log-probabilities from a broken backend) raises :class:`runtime.backends.BackendError`:
the panel records the turn as a failed call and the run goes on.

``n_agents`` is the size of the agent's panel (2 to 26, default 2); the system prompt
names it ("one of three agents").  ``layout`` places the agent's name and role in the
system turn (``agent-first``, the default) or after the case (``case-first``), see
:mod:`dcem_clinical.prompts`.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from common.errors import ConfigError
from common.fields import Instance, Whole, bare, check
from dcem_clinical.contextual import CONTENT_FREE_INPUTS, calibrate, content_free_distribution
from dcem_clinical.few_shot import Example, FewShot
from dcem_clinical.prompts import (AGENT_FIRST, CASE_FIRST, MAX_AGENTS, agent_part, case_prompt, check_layout,
                                   cue_request, letters, system_prompt)
from runtime.backends import Backend, BackendError
from runtime.messages import GenerationOptions, Message, Role

__all__ = ["AgentReport", "DiagnosticAgent", "MODES", "CALIBRATED", "parse_json_reply", "parse_cues",
           "cues_complete"]

CALIBRATED = "scored-calibrated"
MODES = ("scored", "json", CALIBRATED)
MAX_CUES = 3
MAX_CUE_CHARS = 120
CUE_TOKENS = 48  # three short findings fit; generation is the slowest part of a steer


@dataclass(frozen=True)
class AgentReport:
    """One answer: label index, probabilities (K,), what was sent and received."""

    label: int
    probabilities: np.ndarray
    messages: tuple[Message, ...]
    raw: str
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def parse_json_reply(text: str, labels: Sequence[str]) -> tuple[int, np.ndarray]:
    """Parse the structured reply; raises ValueError with a reason when it is unusable."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise ValueError(f"not usable JSON ({str(exc)[:80]})") from None
    check("reply", data, Instance(dict, msg="not a JSON object"), error=bare(ValueError))
    label = data.get("predicted_label")
    if label not in labels:
        raise ValueError(f"predicted_label {label!r} is not one of the labels")
    probs = np.zeros(len(labels))
    given = data.get("probabilities")
    numbers = 0
    if isinstance(given, dict):
        for i, name in enumerate(labels):
            value = given.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            numbers += 1
            try:
                number = float(value)
            except OverflowError:  # an integer too large for a float
                raise ValueError(f"probability of {name!r} is not a finite number") from None
            if not math.isfinite(number):
                raise ValueError(f"probability of {name!r} is not a finite number")
            probs[i] = max(number, 0.0)
    if numbers == 0:  # no vector given: all mass on the stated label
        probs[labels.index(label)] = 1.0
    total = sum(probs.tolist())  # plain floats: an overflow is inf, not a warning
    if not math.isfinite(total) or total <= 0:
        raise ValueError("the probabilities have no finite positive total")
    return labels.index(label), probs / total


def parse_cues(text: str) -> list[str]:
    """Up to three short cue lines from a free-text reply (bullets and numbering removed)."""
    cues = []
    for line in text.splitlines():
        cleaned = line.strip().lstrip("-*•0123456789.) ").strip()
        if cleaned:
            cues.append(cleaned[:MAX_CUE_CHARS])
        if len(cues) == MAX_CUES:
            break
    return cues


def cues_complete(text: str) -> bool:
    """Whether the finished lines of a reply being decoded already give :func:`parse_cues`
    its three cues: then the rest of the reply cannot change what it returns, and decoding
    can stop (``GenerationOptions.until``)."""
    if "\n" not in text:
        return False
    return len(parse_cues(text.rsplit("\n", 1)[0])) >= MAX_CUES


class DiagnosticAgent:
    """An agent over a fixed label set, backed by any :class:`~runtime.backends.Backend`."""

    def __init__(self, backend: Backend, labels: Sequence[str], *, name: str = "Agent A",
                 role: str = "", mode: str = "scored", options: GenerationOptions | None = None,
                 few_shot: FewShot | None = None, content_free: Sequence[float] | None = None,
                 n_agents: int = 2, layout: str = AGENT_FIRST) -> None:
        if mode not in MODES:
            raise ConfigError("mode", f"must be one of {MODES}, got {mode!r}")
        if len(labels) < 2:
            raise ConfigError("labels", "at least two labels are needed")
        check("n_agents", n_agents, Whole(2, MAX_AGENTS, msg="a panel has 2 to {high} agents, got {value!r}"))
        self.backend, self.labels, self.name, self.role, self.mode = backend, tuple(labels), name, role, mode
        self.n_agents = n_agents  # the panel's size, named in the system prompt
        self.layout = check_layout(layout)
        self.options = options or GenerationOptions()
        self.few_shot = few_shot if few_shot is not None and few_shot.config.k > 0 else None
        self.content_free: np.ndarray | None = None
        if content_free is not None:
            self.content_free = content_free_distribution([content_free])

    def examples(self, case_text: str, note: str | None = None) -> list[Example]:
        """The solved examples this case's prompt shows (none without few-shot)."""
        if self.few_shot is None:
            return []
        fmt = "json" if self.mode == "json" else "letter"
        used = len(self.system_prompt()) + len(case_prompt(self.labels, case_text, note,
                                                           answer_format=fmt, agent=self.agent_paragraph()))
        return self.few_shot.select(case_text, self.labels, used)

    def system_prompt(self) -> str:
        """This agent's system turn (the panel's size; its name and role when ``agent-first``)."""
        return system_prompt(self.name, self.role, n_agents=self.n_agents, layout=self.layout)

    def agent_paragraph(self) -> str | None:
        """The paragraph after the case naming this agent and its role (``case-first`` only)."""
        return agent_part(self.name, self.role) if self.layout == CASE_FIRST else None

    def cue_messages(self, case_text: str, current: str, alternative: str) -> list[Message]:
        """The messages of the cue call of a DIFFERENTIAL_STEER (see :meth:`cues`)."""
        return cue_request((current, alternative), case_text, self.name, self.role, n_agents=self.n_agents,
                           labels=self.labels, layout=self.layout)

    def messages(self, case_text: str, note: str | None = None) -> list[Message]:
        return self._messages(case_text, note, self.examples(case_text, note))

    def _messages(self, case_text: str, note: str | None, shown: Sequence[Example]) -> list[Message]:
        fmt = "json" if self.mode == "json" else "letter"
        pairs = [(e.text, e.label) for e in shown]
        return [Message(Role.SYSTEM, self.system_prompt()),
                Message(Role.USER, case_prompt(self.labels, case_text, note, answer_format=fmt, examples=pairs,
                                               agent=self.agent_paragraph()))]

    def content_free_messages(self) -> list[list[Message]]:
        """The prompts of :data:`~dcem_clinical.contextual.CONTENT_FREE_INPUTS` (no note)."""
        return [self.messages(text) for text in CONTENT_FREE_INPUTS]

    def fit_content_free(self) -> np.ndarray:
        """Fit (and keep) the content-free distribution from this agent's own prompts."""
        self.content_free = content_free_distribution(
            [self.raw_scores(m).probabilities for m in self.content_free_messages()])
        return self.content_free

    def _calibrated(self, report: AgentReport) -> AgentReport:
        cf = self.content_free if self.content_free is not None else self.fit_content_free()
        probs = calibrate(report.probabilities, cf)
        return replace(report, label=int(np.argmax(probs)), probabilities=probs,
                       extra={**report.extra, "raw_probabilities": [float(p) for p in report.probabilities],
                              "content_free": [float(v) for v in cf]})

    def raw_scores(self, msgs: list[Message]) -> AgentReport:
        """The uncalibrated scored answer to ``msgs`` (one forward pass)."""
        return self._scored(msgs)

    def _scored(self, msgs: list[Message]) -> AgentReport:
        scores = self.backend.score_options(msgs, letters(len(self.labels)))
        logp = np.asarray(scores.logprobs, dtype=float)
        if logp.shape != (len(self.labels),) or np.isnan(logp).any() or not np.isfinite(logp.max()):
            raise BackendError(f"{self.backend.name} returned unusable log-probabilities "
                               f"({json.dumps([float(v) for v in logp.ravel()[:8]])[:120]})")
        with np.errstate(over="ignore", under="ignore"):  # a spread beyond a float is exp(-inf) = 0
            probs = np.exp(logp - logp.max())
        probs /= probs.sum()  # >= 1: the largest entry is exp(0)
        return AgentReport(int(np.argmax(probs)), probs, tuple(msgs), raw=json.dumps(list(scores.logprobs)),
                           prompt_tokens=scores.prompt_tokens, duration_s=scores.duration_s)

    def schema(self) -> dict[str, Any]:
        return {"type": "object",
                "properties": {"predicted_label": {"type": "string", "enum": list(self.labels)},
                               "probabilities": {"type": "object",
                                                 "properties": {lab: {"type": "number"} for lab in self.labels}}},
                "required": ["predicted_label", "probabilities"]}

    def classify(self, case_text: str, note: str | None = None) -> AgentReport:
        """The agent's label and probability vector for one case (and mediator note)."""
        shown = self.examples(case_text, note)
        report = self._classify(case_text, note, self._messages(case_text, note, shown), shown)
        if shown:
            report = replace(report, extra={**report.extra, "examples": [{**e.to_dict(), "label_name": self.labels[e.label]}
                                                             for e in shown]})
        return report

    def _classify(self, case_text: str, note: str | None, msgs: list[Message],
                  shown: Sequence[Example]) -> AgentReport:
        if self.mode == "scored":
            return self._scored(msgs)
        if self.mode == CALIBRATED:
            return self._calibrated(self._scored(msgs))
        opts = GenerationOptions(temperature=self.options.temperature, seed=self.options.seed,
                                 max_tokens=max(self.options.max_tokens, 40 * len(self.labels)),
                                 json_schema=self.schema())
        reply = self.backend.generate(msgs, opts)
        try:
            label, probs = parse_json_reply(reply.text, self.labels)
        except ValueError as exc:
            pairs = [(e.text, e.label) for e in shown]
            letter_turn = Message(Role.USER, case_prompt(self.labels, case_text, note, examples=pairs,
                                                         agent=self.agent_paragraph()))
            fallback = self._scored([msgs[0], letter_turn])
            return AgentReport(fallback.label, fallback.probabilities, tuple(msgs), raw=reply.text,
                               error=f"unparseable reply ({exc}); used the scored fallback",
                               prompt_tokens=reply.prompt_tokens + fallback.prompt_tokens,
                               completion_tokens=reply.completion_tokens,
                               duration_s=reply.duration_s + fallback.duration_s)
        return AgentReport(label, probs, tuple(msgs), raw=reply.text, prompt_tokens=reply.prompt_tokens,
                           completion_tokens=reply.completion_tokens, duration_s=reply.duration_s)

    def cues(self, case_text: str, current: str, alternative: str) -> tuple[list[str], AgentReport]:
        """Ask the agent, in a separate call, for cues separating two labels (Appendix G)."""
        msgs = self.cue_messages(case_text, current, alternative)
        reply = self.backend.generate(msgs, GenerationOptions(temperature=self.options.temperature,
                                                              seed=self.options.seed, max_tokens=CUE_TOKENS,
                                                              until=cues_complete))
        cues = parse_cues(reply.text)
        report = AgentReport(-1, np.zeros(0), tuple(msgs), raw=reply.text,
                             error=None if cues else "no cues in the reply",
                             prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                             duration_s=reply.duration_s, extra={"cues": cues})
        return cues, report
