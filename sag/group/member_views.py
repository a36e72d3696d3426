"""What each member of a view group reads of a DDXPlus-8 case.

A group with ``views`` (:class:`sag.group.config.GroupConfig`) gives each reasoning agent one
view of the case (:mod:`clinical.ddxplus_views`): its prompt holds the shared transcript
(the question without the case, the options and every earlier turn), then what it read,
then its instruction.  The safety agents, the judges and the knowledge agents read no
part of the case: they see only what the reasoning agents say.  Each item must be a
DDXPlus-8 case (benchmark ``ddxplus8`` or its HELD-OUT part), found by its id.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any, Sequence

from clinical.ddxplus_views import ALL, VIEW_READS, view_vignette
from clinical.questions import QuestionItem
from common.errors import ConfigError

__all__ = ["reads", "masked_item", "member_reading", "case_reading", "check_view_items", "reading_block", "TWIN_KINDS", "twin_items",
           "twin_of"]

TWIN_KINDS = ("sex", "age")
"""Counterfactual twins of a case (fairness, CDR): ``sex`` swaps M and F, ``age`` moves the
patient 30 years (older when under 45, younger otherwise, never below 1); the evidence is
the case's own.  A twin's id is ``<case id>~<kind>``."""


def _twin(case: Any, kind: str) -> Any:
    if kind == "sex":
        return replace(case, case_id=f"{case.case_id}~sex", sex={"M": "F", "F": "M"}.get(case.sex, case.sex))
    age = case.age + 30 if case.age < 45 else max(1, case.age - 30)
    return replace(case, case_id=f"{case.case_id}~age", age=age)


@lru_cache(maxsize=1)
def _cases() -> dict[str, Any]:
    from clinical.ddxplus import load_ddxplus8

    cases = {c.case_id: c for c in load_ddxplus8()}
    return {**cases, **{f"{i}~{k}": _twin(c, k) for i, c in cases.items() for k in TWIN_KINDS}}


def twin_of(item_id: str) -> tuple[str, str | None]:
    """(the case id, the twin kind or None) of an item id."""
    base, tilde, kind = item_id.partition("~")
    return (base, kind) if tilde and kind in TWIN_KINDS else (item_id, None)


def twin_items(items: Sequence[QuestionItem]) -> tuple[QuestionItem, ...]:
    """Each DDXPlus-8 item's twins (:data:`TWIN_KINDS`, in that order), as questions whose
    case text is rendered with the twin's age and sex."""
    from clinical.ddxplus_views import ALL

    check_view_items(items)
    out = []
    for item in items:
        for kind in TWIN_KINDS:
            twin_id = f"{item.item_id}~{kind}"
            text = member_reading(replace(item, item_id=twin_id), ALL)
            question = item.question.rpartition("\n\n")[2]
            out.append(replace(item, item_id=twin_id, question=f"{text}\n\n{question}"))
    return tuple(out)


def reads(view: str) -> str:
    """What a member with ``view`` read, in words ("the history and risk factors")."""
    return VIEW_READS.get(view, view)


def check_view_items(items: Sequence[QuestionItem]) -> None:
    """ConfigError naming the first item that is not a DDXPlus-8 case (a view group reads
    parts of DDXPlus-8 cases only)."""
    cases = _cases()
    for item in items:
        if item.item_id not in cases:
            case_reading(item.item_id, ALL)  # raises, naming the item


def masked_item(item: QuestionItem) -> QuestionItem:
    """The item as the shared transcript shows it in a view group: the final question
    without the case before it."""
    question = item.question.rpartition("\n\n")[2].strip() or item.question
    return replace(item, question=question, context="")


def member_reading(item: QuestionItem, view: str) -> str:
    """The vignette a member with ``view`` reads of the item's case."""
    return case_reading(item.item_id, view)


def case_reading(case_id: str, view: str) -> str:
    """The vignette a member with ``view`` reads of the DDXPlus-8 case (or twin) ``case_id``;
    ConfigError when there is no such case."""
    case = _cases().get(case_id)
    if case is None:
        raise ConfigError("views", f"a group whose members read views answers DDXPlus-8 cases only "
                                   f"(benchmark ddxplus8 or heldout:ddxplus8); item {case_id!r} is not one")
    return view_vignette(view, case.age, case.sex, case.evidences, case.initial_evidence)


def reading_block(item: QuestionItem, view: str) -> str:
    """The private part of a member's prompt: what it read, headed by which part it is."""
    return f"What you read of the case, {reads(view)}:\n{member_reading(item, view)}"
