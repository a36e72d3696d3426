"""Answer one item with a configured group, by its method; calibrate the D-CEM variant.

:func:`answer_item` dispatches on ``cfg.method``: the baselines of :mod:`sag.debate.baselines`,
the debate of :mod:`sag.debate.hybrid` (with its ablations), or the debate with D-CEM as its
stopping rule (:mod:`sag.debate.mediated`, which needs a panel from :func:`calibrate`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from clinical.questions import QuestionItem
from common.errors import ConfigError
from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from runtime.call_log import CallLog
from runtime.turns import TurnRunner
from sag.debate.baselines import play_majority, play_single
from sag.group.config import GroupConfig
from sag.debate.hybrid import Debate, Searcher, debate_round, play_debate, propose_step
from sag.debate.decide import letter_of, refusal_score
from sag.debate.engine import TurnEngine
from sag.group.failures import ItemFailed
from sag.debate.mediated import MediatedStop, calibrate_panel, fit_mediator, reporters_of, reports_matrix
from sag.debate.results import ItemResult
from sag.group.transcript import GroupMessage

__all__ = ["answer_item", "calibrate", "Calibration", "CalibrationFailed", "check_fixed_options"]


def answer_item(item: QuestionItem, cfg: GroupConfig, runners: Mapping[str, TurnRunner],
                retrievers: Mapping[str, Searcher], *, log: CallLog | None = None, run_id: str | None = None,
                calibration: "Calibration | None" = None) -> ItemResult:
    """Play one item with the group and return its result (model calls counted);
    :class:`~sag.group.failures.ItemFailed`, with the item's cost, when a model call failed."""
    engine = TurnEngine(runners, cfg, log=log, run_id=run_id, item_id=item.item_id)
    start = time.perf_counter()
    try:
        return _play(item, cfg, engine, retrievers, calibration, start)
    except ItemFailed as exc:
        raise exc.with_cost(engine.calls, engine.cached, time.perf_counter() - start) from None


def _play(item: QuestionItem, cfg: GroupConfig, engine: TurnEngine, retrievers: Mapping[str, Searcher],
          calibration: "Calibration | None", start: float) -> ItemResult:
    mediator = ()
    if cfg.method == "single":
        outcome = play_single(item, cfg, engine)
    elif cfg.method == "majority":
        outcome = play_majority(item, cfg, engine, retrievers)
    elif cfg.method == "dcem":
        if calibration is None:
            raise ConfigError("calibration", "the dcem method needs a calibrated panel (see sag.debate.answer.calibrate)")
        check_fixed_options([item], len(calibration.panel.labels))
        controller = MediatedStop(calibration.panel, calibration.config, reporters_of(cfg))
        outcome = play_debate(item, cfg, engine, retrievers, controller)
        mediator = tuple(controller.rounds)
    else:
        outcome = play_debate(item, cfg, engine, retrievers)
    last = [m for m in outcome.messages if m.round == outcome.rounds]
    return ItemResult(item, outcome, mediator, engine.calls, engine.cached, time.perf_counter() - start,
                      refusal_score(last))


def check_fixed_options(items: Sequence[QuestionItem], n: int | None = None) -> int:
    """The items' common number of options; ConfigError when they differ (the D-CEM
    variant's labels are the option letters, so they must be the same for every item)."""
    counts = sorted({len(it.options) for it in items} | ({n} if n is not None else set()))
    if len(counts) != 1:
        raise ConfigError("benchmark", "the dcem method needs items with the same number of options; these have "
                                       + ", ".join(str(c) for c in counts))
    return counts[0]


class CalibrationFailed(ConfigError):
    """A calibration item's model call failed: the D-CEM variant cannot be calibrated."""


def _reported(message: GroupMessage, letters: Sequence[str]) -> str:
    letter = letter_of(message, letters)
    if letter is None:  # a failed call raises ItemFailed before this
        raise ValueError(f"agent {message.agent_id} reported no letter")
    return letter


@dataclass(frozen=True)
class Calibration:
    """The D-CEM variant's panel and where it came from (stored with the run)."""

    panel: Panel
    config: MediatorConfig
    item_ids: tuple[str, ...]
    reporters: tuple[str, ...]
    reports: np.ndarray  # int (n, A): each reporter's letter in round 1 of each item
    fit: dict[str, object] = field(default_factory=dict)
    model_calls: int = 0
    cached_calls: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"items": list(self.item_ids), "reporters": list(self.reporters), "letters": list(self.panel.labels),
                "confusion": self.panel.confusion.round(6).tolist(), "reports": self.reports.tolist(),
                "mediator": {k: getattr(self.config, k) for k in ("eps_safe", "eps_low", "m_safe", "delta", "t_max")},
                "fit": self.fit}


def calibrate(items: Sequence[QuestionItem], cfg: GroupConfig, runners: Mapping[str, TurnRunner],
              retrievers: Mapping[str, Searcher], *, log: CallLog | None = None, run_id: str | None = None,
              progress: Callable[[int, int], None] | None = None) -> Calibration:
    """Play round 0 and the flat step of round 1 on calibration items; each reporter's
    letters against the truth give its confusion matrix (see :func:`calibrate_panel`)."""
    k = check_fixed_options(items)
    letters = items[0].letters
    reporters = reporters_of(cfg)
    rows, probs, calls, cached = [], [], 0, 0
    for n, item in enumerate(items):
        engine = TurnEngine(runners, cfg, log=log, run_id=run_id, item_id=item.item_id)
        debate = Debate(item, cfg, engine, retrievers)
        try:
            propose_step(debate)
            debate_round(debate, 1, {}, flat_only=True)
        except ItemFailed as exc:
            raise CalibrationFailed("calibration", f"calibration item {n + 1} of {len(items)} "
                                    f"({item.item_id!r}) got no answer, so nothing was calibrated: "
                                    f"{exc.failure.reason}; run the same command again to retry") from None
        round_one = debate.round_messages(1)
        probs.append(reports_matrix(round_one, reporters, k))
        by_agent = {m.agent_id: m for m in round_one if m.phase == "debate"}
        rows.append([letters.index(_reported(by_agent[a], letters)) for a in reporters])
        calls, cached = calls + engine.calls, cached + engine.cached
        if progress is not None:
            progress(n + 1, len(items))
    truth = np.asarray([it.answer_index for it in items])
    reports = np.asarray(rows, dtype=int).reshape(len(items), len(reporters))
    panel = calibrate_panel(truth, reports, letters[:k], cfg)
    fit = fit_mediator(panel, reports, np.asarray(probs), truth, cfg)
    return Calibration(panel, fit.config, tuple(it.item_id for it in items), reporters, reports, fit.report,
                       calls, cached)
