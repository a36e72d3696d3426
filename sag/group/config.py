"""A Small Agent Group's configuration: roles, sizes, backbones, method and debate settings.

Roles (seed 004, section 2): reasoning agents A_R, knowledge agents A_K (retrieval),
safety agents A_S and synthesis-and-judge agents A_J.  Sizes (App. H): 6 = 2/2/1/1,
10 = 3/3/2/2 (the default), 15 = 5/5/3/2 agents of each role.  Any registry key
(``smollm2-135m``, ``gemma3-270m``, ``file:...``, ``hf:...``, ``openai:URL#MODEL``) can
serve any role; one loaded model serves every agent that uses it.

Methods (Table 3 and this project's D-CEM variant), selected by name:

- ``sag``: the full group and its hybrid debate;
- ``single``: one reasoning agent answering alone;
- ``majority``: the same agents answering once each without interaction, plurality vote;
- ``no_reasoning`` / ``no_knowledge`` / ``no_safety`` / ``no_judge``: the ablations
  (without A_R the knowledge agents propose; without A_K there is no retrieval; without
  A_S nothing can be refused; without A_J the answer is the plurality of A_R);
- ``dcem``: the debate with D-CEM as its stopping rule (see :mod:`sag.debate.mediated`).

Presets are named ``sag-6``, ``sag-10``, ``sag-15``, optionally followed by ``-mixed``
(reasoning and judge agents on ``gemma3-270m``, knowledge and safety agents on
``smollm2-135m``) and by a method (``sag-6-no_judge``, ``sag-10-dcem``,
``sag-6-majority``); ``single`` is one reasoning agent.

A group file (``--group FILE.json``, :func:`load_group_file`) is one JSON object of these
fields, read as strict UTF-8 and strict JSON (:mod:`common.strict_json`: finite numbers
only, bounded nesting, no key given twice).  Every number must be finite and in range:
the loss matrix's entries are numbers (not text, not true/false) from 0 to
:data:`dcem.core.panel.MAX_LOSS`; ``counts``, ``backbones`` and ``corpora`` are lists.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any, Mapping

from common import strict_json
from common.errors import ConfigError, InputError
from common.fields import Field, Instance, Number, OneOf, Seq, Spec, Text, Whole, check, shown
from dcem.core.panel import MAX_LOSS

__all__ = ["AgentRole", "ROLES", "SIZES", "METHODS", "DEFAULT_MODEL", "MIXED_MODEL", "AgentSpec", "GroupConfig",
           "preset", "PRESETS", "load_group_file"]

DEFAULT_MODEL = "smollm2-135m"
MIXED_MODEL = "gemma3-270m"


class AgentRole(str, Enum):
    REASONING = "reasoning"
    KNOWLEDGE = "knowledge"
    SAFETY = "safety"
    JUDGE = "judge"

    @property
    def prefix(self) -> str:
        """One letter naming the role's agents: R1, K2, S1, J1."""
        return {"reasoning": "R", "knowledge": "K", "safety": "S", "judge": "J"}[self.value]


ROLES: tuple[AgentRole, ...] = tuple(AgentRole)
SIZES: dict[int, tuple[int, int, int, int]] = {6: (2, 2, 1, 1), 10: (3, 3, 2, 2), 15: (5, 5, 3, 2)}
METHODS = ("sag", "single", "majority", "no_reasoning", "no_knowledge", "no_safety", "no_judge", "dcem")
_ABLATED = {"no_reasoning": 0, "no_knowledge": 1, "no_safety": 2, "no_judge": 3}
CORPORA = ("medlineplus", "pubmedqa", "ddxplus")


@dataclass(frozen=True)
class AgentSpec:
    """One agent: its id (``R1``), role, model key and (knowledge agents) its corpus."""

    agent_id: str
    role: AgentRole
    model: str
    corpus: str | None = None


def _printable(limit: int) -> Text:
    return Text(max_len=limit, printable=True,
                msg=lambda v: f"must be printable text of at most {limit} characters, got {ascii(v[:40])}")


_LIST = Seq(to_tuple=True, msg="must be a list, got {type}")
_MODEL_KEY = Field((Text(msg="must be a non-empty text"), _printable(1000)))
_AGENT_ID = Text(nonempty=False, pattern=re.compile(r"[RKSJ][0-9]+"), msg="{shown} is not an agent id (R1, K2, S1, J1 ...)")
_PAIR = Seq(min_len=2, max_len=2, msg="must map agent ids (R1, K2, S1, J1 ...) to model keys")
_SQUARE = ("must be a square matrix over the option letters: a list of 2 to 26 rows, "
           "each a list of as many numbers")
_FOUR_COUNTS = Seq(min_len=4, max_len=4, msg="need four counts (A_R, A_K, A_S, A_J), got {len}")
_FOUR_BACKBONES = Seq(Text(), min_len=4, max_len=4, msg="need one non-empty model key per role (A_R, A_K, A_S, A_J)")
_FIELDS = Spec({
    "counts": _LIST, "backbones": _LIST, "corpora": _LIST, "views": _LIST,
    "name": (Text(msg="a group needs a name"), _printable(100)),
    "method": OneOf(METHODS, msg="unknown method {value!r}; choose one of {choices}"),
    "t_max": Whole(1, 10), "rationale_tokens": Whole(1, 512), "top_k": Whole(1, 10), "seed": Whole(0, 2**31 - 1),
    "n_cal": Whole(2, 10_000),
    "temperature": Number(0.0, 5.0), "top_p": Number(1e-6, 1.0), "refuse_threshold": Number(1e-6, 1.0),
    "alternatives": Whole(0, 7),
}, show=shown)
_CORPORA = Seq(OneOf(CORPORA), min_len=1, msg="each corpus must be one of " + ", ".join(CORPORA) + ", got {value}")


def _agent_models(value: object) -> tuple[tuple[str, str], ...]:
    """``{agent id: model key}`` (or its pairs) as sorted pairs, each checked."""
    pairs = value.items() if isinstance(value, Mapping) else check("agent_models", value, _LIST)
    out = []
    for pair in pairs:
        agent_id, model = check("agent_models", pair, _PAIR)
        check("agent_models", agent_id, _AGENT_ID, show=shown)
        _MODEL_KEY.check("agent_models", model)
        out.append((agent_id, str(model).strip()))
    if len({a for a, _ in out}) != len(out):
        raise ConfigError("agent_models", "an agent id is given twice")
    return tuple(sorted(out))


def _loss_matrix(value: object) -> tuple[tuple[float, ...], ...]:
    """A square loss matrix of finite numbers in [0, MAX_LOSS], as floats."""
    rows = check("loss", value, _LIST)
    check("loss", rows, Seq(min_len=2, max_len=26, msg=_SQUARE))
    for row in rows:
        check("loss", row, Seq(min_len=len(rows), max_len=len(rows), msg=_SQUARE))
    out = []
    for d, row in enumerate(rows):
        for y, v in enumerate(row):
            where = f"row {d + 1}, column {y + 1}"
            check("loss", v, Number(numpy=True, msg=where + ": {shown} is not a number"),
                  Number(0, MAX_LOSS, finite=True, msg=where + ": {shown} must be a finite number from 0 to "
                                                             + f"{MAX_LOSS:g}"))
        out.append(tuple(float(v) for v in row))
    return tuple(out)


@dataclass(frozen=True)
class GroupConfig:
    """How a group is made and how it debates.

    counts : agents per role (A_R, A_K, A_S, A_J) before the method removes any.
    backbones : model key per role, in the same order.
    t_max : debate rounds after round 0 (the seed gives none; 3 here).
    rationale_tokens : token budget of each agent's generated rationale.
    top_k : passages each knowledge agent retrieves per search.
    corpora : the corpus of knowledge agent i is ``corpora[i % len(corpora)]``.
    temperature, top_p, seed : decoding of the answer letters and rationales (0 = greedy; above 0
        an agent's letter is drawn from its distribution, see :func:`sag.debate.engine.decode_letter`).
    refuse_threshold : a safety vote or judge answer is REFUSE when its probability of
        REFUSE (among the option letters and REFUSE) reaches this value.
    n_cal : calibration items of the ``dcem`` method (confusions of each reporter).
    loss : the ``dcem`` method's loss matrix over option letters (None = 0/1 loss).
    views : the part of each case each reasoning agent reads, one DDXPlus-8 view per
        reasoning agent in order (:mod:`clinical.ddxplus_views`; empty: every agent reads
        the whole question).  With views, the shared transcript holds the question without
        the case, so the safety agents, the judges and the knowledge agents read no case,
        and every item must be a DDXPlus-8 case (:mod:`sag.group.member_views`).
    alternatives : how many runner-up letters, with their probabilities, each answer line
        of the transcript shows after the answer (0: the answer and its probability only).
    agent_models : model keys of single agents, by agent id (``{"R2": "smollm2-135m+lora:x"}``),
        overriding their role's backbone: members of one role trained apart.
    """

    name: str = "sag-10"
    method: str = "sag"
    counts: tuple[int, int, int, int] = SIZES[10]
    backbones: tuple[str, str, str, str] = (DEFAULT_MODEL,) * 4
    t_max: int = 3
    rationale_tokens: int = 48
    top_k: int = 3
    corpora: tuple[str, ...] = CORPORA
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    refuse_threshold: float = 0.5
    n_cal: int = 20
    loss: tuple[tuple[float, ...], ...] | None = None
    views: tuple[str, ...] = ()
    alternatives: int = 0
    agent_models: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        _FIELDS.apply(self, "counts", "backbones", "corpora", "views")
        if self.loss is not None:
            object.__setattr__(self, "loss", _loss_matrix(self.loss))
        object.__setattr__(self, "agent_models", _agent_models(self.agent_models))
        self._validate()

    def _validate(self) -> None:
        _FIELDS.apply(self, "name", "method")
        check("counts", self.counts, _FOUR_COUNTS)
        for role, n in zip(ROLES, self.counts):
            check(f"counts.{role.value}", n, Whole(0, 16), show=shown)
        check("backbones", self.backbones, _FOUR_BACKBONES)
        for backbone in self.backbones:
            _MODEL_KEY.check("backbones", backbone)
        _FIELDS.apply(self, "t_max", "rationale_tokens", "top_k", "seed", "n_cal")
        check("corpora", self.corpora, _CORPORA)
        _FIELDS.apply(self, "temperature", "top_p", "refuse_threshold", "alternatives")
        self._validate_views()
        if not self.agents():
            raise ConfigError("counts", f"method {self.method!r} leaves no agent in the group")

    def _validate_views(self) -> None:
        if not self.views:
            return
        from clinical.ddxplus_views import DDXPLUS_VIEWS

        if len(self.views) != self.counts[0]:
            raise ConfigError("views", f"need one view per reasoning agent ({self.counts[0]}), got {len(self.views)}")
        bad = [v for v in self.views if v not in DDXPLUS_VIEWS]
        if bad:
            raise ConfigError("views", f"unknown view {shown(bad[0])}; valid: {', '.join(DDXPLUS_VIEWS)}")

    def view_of(self, agent_id: str) -> str | None:
        """The view a reasoning agent reads (None: the whole question, or not a reasoning agent)."""
        if not self.views or not agent_id.startswith("R") or not agent_id[1:].isdigit():
            return None
        index = int(agent_id[1:]) - 1
        return self.views[index] if 0 <= index < len(self.views) else None

    def role_counts(self) -> tuple[int, int, int, int]:
        """Agents per role once the method is applied."""
        if self.method == "single":
            return (1, 0, 0, 0)
        counts = list(self.counts)
        if self.method in _ABLATED:
            counts[_ABLATED[self.method]] = 0
        return (counts[0], counts[1], counts[2], counts[3])

    def agents(self) -> tuple[AgentSpec, ...]:
        """The group's agents in role order: R1.., K1.., S1.., J1.."""
        out: list[AgentSpec] = []
        own = dict(self.agent_models)
        for role, n, model in zip(ROLES, self.role_counts(), self.backbones):
            for i in range(n):
                corpus = self.corpora[i % len(self.corpora)] if role is AgentRole.KNOWLEDGE else None
                agent_id = f"{role.prefix}{i + 1}"
                out.append(AgentSpec(agent_id, role, own.get(agent_id, model.strip()), corpus))
        return tuple(out)

    @property
    def size(self) -> int:
        return len(self.agents())

    def models(self) -> tuple[str, ...]:
        """The distinct model keys the group loads, in first-use order."""
        return tuple(dict.fromkeys(a.model for a in self.agents()))

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain values; ``views`` and ``alternatives`` only when set, so a group
        without them keeps the digest (and the run ids) it had before they existed."""
        values = asdict(self)
        values["agent_models"] = {a: m for a, m in self.agent_models}
        for name, default in (("views", ()), ("alternatives", 0), ("agent_models", ())):
            if values[name] in (default, {}):
                del values[name]
        return values

    def digest(self) -> str:
        """A short hash of everything that changes the group's answers."""
        blob = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]

    def with_changes(self, **changes: Any) -> "GroupConfig":
        return replace(self, **changes)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "GroupConfig":
        """A config from a JSON object; unknown keys are refused by name."""
        check("group", values, Instance(Mapping, msg="expected a JSON object, got {type}"))
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError("group", f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        try:
            return cls(**dict(values))
        except TypeError as exc:
            raise ConfigError("group", str(exc)) from None


def load_group_file(path: str | Path) -> GroupConfig:
    """A group from a JSON file (see the module docstring); every problem is a
    :class:`ConfigError` on field ``group`` naming the file."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except (OSError, ValueError) as exc:
        raise ConfigError("group", f"cannot read {file}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        values = strict_json.loads(strict_json.decode_utf8(data, "group", str(file)), str(file), strict_text=True)
    except InputError as exc:
        detail = str(exc)
        raise ConfigError("group", detail.removeprefix("group: ")) from None
    try:
        return GroupConfig.from_mapping(values)
    except ConfigError as exc:
        raise ConfigError("group", f"{file}: {exc}") from None


PRESETS = ("single", "single-gemma", "vote-6", "sag-6", "sag-10", "sag-15", "sag-6-mixed", "sag-10-mixed", "sag-6-majority", "sag-6-dcem")


def preset(name: str) -> GroupConfig:
    """A named group: ``single`` (= ``single-smollm2``), ``single-gemma``,
    ``sag-<6|10|15>[-mixed][-<method>]``, or ``vote-<6|10|15>`` (= ``sag-N-majority``)."""
    text = name.strip().lower() if isinstance(name, str) else ""
    if text in ("single", "single-smollm2"):
        return GroupConfig(name=text, method="single")
    if text == "single-gemma":
        return GroupConfig(name=text, method="single", backbones=(MIXED_MODEL,) * 4)
    vote = text.split("-", 1)
    if vote[0] == "vote" and len(vote) == 2:  # vote-N: the majority vote of SAG-N's agents
        if not vote[1].isdigit() or int(vote[1]) not in SIZES:
            raise ConfigError("group", f"unknown group {name!r}; vote-N takes N in {', '.join(map(str, SIZES))}")
        return preset(f"sag-{vote[1]}-majority").with_changes(name=text)
    parts = text.split("-", 2)
    if len(parts) < 2 or parts[0] != "sag" or not parts[1].isdigit() or int(parts[1]) not in SIZES:
        raise ConfigError("group", f"unknown group {name!r}; use single or sag-6, sag-10, sag-15, optionally "
                                   f"followed by -mixed and/or a method ({', '.join(METHODS)})")
    size, rest = int(parts[1]), parts[2] if len(parts) > 2 else ""
    mixed = rest == "mixed" or rest.startswith("mixed-")
    if mixed:
        rest = rest[len("mixed"):].lstrip("-")
    method = rest.replace("-", "_") or "sag"
    if method not in METHODS or method == "single":
        raise ConfigError("group", f"unknown method {rest!r} in {name!r}; choose one of {', '.join(METHODS)}")
    backbones = (MIXED_MODEL, DEFAULT_MODEL, DEFAULT_MODEL, MIXED_MODEL) if mixed else (DEFAULT_MODEL,) * 4
    return GroupConfig(name=text, method=method, counts=SIZES[size], backbones=backbones)
