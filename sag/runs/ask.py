"""``python -m sag ask``: debate one question and print it round by round, for teaching.

Each turn is printed with its round, role, agent, model, answer distribution, rationale,
citations, flags and (judges) the NEW mark; retrievals with their passage ids and scores;
then the group's answer and the rule that gave it.  Model calls go through the store's
call log, so asking the same question twice answers from the log.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from clinical.questions import QuestionItem
from common.errors import ConfigError
from common.terminal import escape_controls
from sag.group.failures import EXIT_FAILED, FailedItem, ItemFailed
from sag.debate.turning import member_reads
from sag.debate.results import ItemResult
from sag.group.transcript import GroupMessage

__all__ = ["ask", "format_debate", "format_failure", "format_message"]

_PHASES = {"retrieve": "retrieval", "propose": "proposal", "debate": "debate", "audit": "safety audit",
           "judge": "judgement", "answer": "answer"}


def _distribution(letters: tuple[str, ...], message: GroupMessage) -> str:
    parts = [f"{letter} {p:.2f}" for letter, p in zip(letters, message.distribution)]
    if message.refuse_probability is not None:
        parts.append(f"REFUSE {message.refuse_probability:.2f}")
    return "  ".join(parts)


def format_message(message: GroupMessage, letters: tuple[str, ...]) -> list[str]:
    """The lines printed for one turn."""
    head = f"  {message.agent_id:<4} {message.role.value:<9} {message.model}"
    if message.phase == "retrieve":
        hits = ", ".join(f"{pid} ({score:.1f})" for pid, score in message.retrieved) or "nothing found"
        return [f"{head}  retrieved: {hits}"]
    if message.error:
        return [f"{head}  no answer: {message.error}"]
    lines = [f"{head}  answer {message.answer}   [{_distribution(letters, message)}]"]
    if message.note:
        lines.append(f"       challenge received: {message.note}")
    rationale = " ".join(message.rationale.split()) or "(empty)"
    lines.append(f"       rationale: {rationale}")
    r = message.reading
    extras = []
    if r.citations:
        extras.append("cites " + ", ".join(r.citations))
    if r.stances:
        extras.append("stances " + ", ".join(r.stances))
    if r.flags:
        extras.append("flags: " + " | ".join(r.flags))
    if r.new_substance is not None:
        extras.append(f"NEW: {'yes' if r.new_substance else 'no'}")
    if r.note:
        extras.append(f"not read: {r.note}")
    if extras:
        lines.append("       " + "; ".join(extras))
    return lines


def _turn_lines(item: QuestionItem, messages: Sequence[GroupMessage]) -> list[str]:
    """The question, its options and every turn, round by round."""
    letters = item.letters
    # item and model text printed with its control characters escaped (a question keeps its line breaks)
    lines = [f"Question: {escape_controls(item.question, keep=chr(10) + chr(9))}"]
    lines += [f"  {letter}. {escape_controls(text)}" for letter, text in item.options]
    last = None
    for m in messages:
        if (m.round, m.phase) != last:
            last = (m.round, m.phase)
            lines.append(f"\nRound {m.round}, {_PHASES.get(m.phase, m.phase)}:")
        lines.extend(escape_controls(line) for line in format_message(m, letters))
    return lines


def format_failure(item: QuestionItem, failure: FailedItem) -> str:
    """The debate up to the step whose model call failed, and that the group has no answer."""
    lines = _turn_lines(item, failure.messages)
    lines.append(f"\nNo group answer: {escape_controls(failure.reason)}.")
    lines.append("A failed model call is never counted as an answer; nothing was scored.")
    lines.append(f"{failure.model_calls} model calls, {failure.cached_calls} from the call log, "
                 f"{failure.seconds:.1f} s")
    return "\n".join(lines)


def format_debate(result: ItemResult, *, answer_known: bool, cfg: object = None) -> str:
    """The whole debate of one item as printable text (with what each member read, when
    ``cfg`` is a view group's)."""
    item, out = result.item, result.outcome
    lines = _turn_lines(item, out.messages)
    reads = member_reads(cfg) if cfg is not None else {}
    if reads:
        from sag.group.member_views import member_reading

        lines += ["\nWhat each member read (the judge and the safety agent read none of the case):"]
        lines += [f"  {agent} read {words}: {escape_controls(member_reading(item, str(cfg.view_of(agent))))}"  # type: ignore[attr-defined]
                  for agent, words in reads.items()]
        from sag.debate.turning import messages_frame, turning_lines

        turned = turning_lines(messages_frame(out.messages), reads)
        lines += ["How the debate turned:"] + [f"  {escape_controls(t)}" for t in turned or
                                                ["no member changed its answer"]]
    for r in result.mediator:
        steer = f" -> challenge to {r.steer_agent} about {r.steer_alternative}" if r.steer_agent else ""
        lines.append(f"D-CEM round {r.round}: {r.action} (decision {r.decision}, energy {r.energy:.3f}, "
                     f"margin {r.margin:.3f}){steer}")
    lines.append(f"\nGroup answer: {out.answer} ({out.rule}); {out.rounds} round(s), stopped: {out.stop_reason}")
    if answer_known:
        lines.append(f"Correct answer: {item.answer} -> {'correct' if result.correct else 'not correct'}")
    lines.append(f"{result.model_calls} model calls, {result.cached_calls} from the call log, {result.seconds:.1f} s")
    lines.append("Research and teaching tool, not clinical advice.")
    return "\n".join(lines)


def ask(args: argparse.Namespace) -> int:
    """Run ``python -m sag ask`` (arguments of :mod:`sag.cli`)."""
    from runtime.call_log import CallLog
    from sag.group.args import group_from_args
    from sag.debate.answer import answer_item
    from sag.debate.runners import batch_width, build_runners
    from sag.group.question_input import read_question
    from sag.retrieval import retrievers
    from sag.runs.run import corpora_of
    from sag.store.tables import SagStore

    cfg = group_from_args(args)
    if cfg.method == "dcem":
        raise ConfigError("group", "the dcem method needs calibration items of a benchmark: use `python -m sag run`")
    asked = _case_question(args.question) if cfg.views else read_question(args.question, item_id=args.item)
    with SagStore(args.db) as store:
        runners = build_runners(cfg.models(), n_threads=args.threads, n_gpu_layers=args.n_gpu_layers,
                                batched=not args.sequential, width=batch_width(cfg))
        try:
            result = answer_item(asked.item, cfg, runners, retrievers(corpora_of(cfg)), log=CallLog(store))
        except ItemFailed as exc:
            print(format_failure(asked.item, exc.failure))
            print(f"error: no group answer: {escape_controls(exc.failure.reason)}", file=sys.stderr)
            return EXIT_FAILED
    print(format_debate(result, answer_known=asked.answer_known, cfg=cfg))
    return 0


def _case_question(text: str) -> object:
    """A view group's question: a DDXPlus-8 case named by its id (``ddx-0001``, or a twin
    ``ddx-0001~sex``), whose answer is known."""
    from clinical.questions import load_benchmark
    from sag.group.member_views import check_view_items, twin_items, twin_of
    from sag.group.question_input import AskedQuestion

    case_id, kind = twin_of(text.strip())
    found = [it for it in load_benchmark("ddxplus8") if it.item_id == case_id]
    if not found:
        raise ConfigError("question", f"a group whose members read views debates a DDXPlus-8 case: give its id "
                                      f"(ddx-0001 ... ddx-0825, or a twin such as ddx-0001~sex), got {text[:60]!r}")
    item = found[0] if kind is None else next(t for t in twin_items(found) if t.item_id == text.strip())
    check_view_items([item])
    return AskedQuestion(item, True)
