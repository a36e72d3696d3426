"""Score every case of a :class:`~dcem.analysis.run_replay.RunReplay` under per-cell settings.

The same computation as :func:`dcem.core.replay.score_reports` cell by cell (same per-tuple
table, same policy kernel, identical outcomes), organised for a whole run: each cell's
mediator table is memoised on the replay (it depends only on the panel, the loss and the
configuration fields the policy does not read), the gathers are per cell, and cells that
share the policy's scalar settings (horizon, t_max, window, escalation, delta, eps_low)
go through one call of :func:`dcem.core.replay_kernel.policy_over_rounds`.  Metrics are pooled
over cases with :func:`dcem.core.metrics.episode_metrics`.

Cells with probability-vector reports (``ReplayCell.probabilities``) are scored as
:func:`dcem.core.replay.score_probabilities` does; their per-round mediator states depend on
the threshold-free settings only, so they are memoised on the replay too and a threshold
change re-runs the policy alone (:func:`dcem.core.replay.score_states`).
"""
from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np

from dcem.core.metrics import episode_metrics
from dcem.analysis.run_replay import RunReplay
from dcem.core.config import MediatorConfig
from dcem.core.energy import windowed_descent
from dcem.core.panel import validate_loss
from dcem.core.policy import Action
from dcem.core.replay import Trajectory, score_reports, score_states
from dcem.core.replay_kernel import Targets, certify, challenge_codes, policy_over_rounds, targets
from dcem.core.state import RoundState, assess_probabilities, assess_reports
from dcem.core.vocabulary import mediated_methods
from common.errors import InputError
from common.fields import Instance, check

__all__ = ["THRESHOLD_FIELDS", "ROUND_ACTIONS", "RunOutcomes", "check_loss", "cell_configs",
           "cell_losses", "score_run", "pooled_metrics"]

THRESHOLD_FIELDS = ("eps_safe", "eps_low", "m_safe", "delta")  # fitted per cell
ROUND_ACTIONS = (Action.CONTINUE, Action.DIFFERENTIAL_STEER, Action.STOP_AND_DECIDE,
                 Action.STOP_AND_ESCALATE)
# fields read only by the policy (not by the per-tuple mediator table)
_POLICY_FIELDS = frozenset(THRESHOLD_FIELDS + ("s_asym", "window", "t_max", "escalation"))
_TABLE_FIELDS = tuple(f.name for f in fields(MediatorConfig) if f.name not in _POLICY_FIELDS)


class RunOutcomes:
    """Per-case outcome arrays over all cases of a run (cell order): action (int8 code),
    decision, rounds (1-based outcome round), certified, budget, energy (at the outcome
    round), lowest (the lowest energy of the played rounds); and round_counts, the number of
    played rounds (round 1 to the outcome round) per :data:`ROUND_ACTIONS`."""

    def __init__(self, n: int) -> None:
        self.action = np.empty(n, dtype=np.int8)
        self.decision = np.empty(n, dtype=np.int64)
        self.rounds = np.empty(n, dtype=np.int64)
        self.certified = np.empty(n, dtype=bool)
        self.budget = np.empty(n, dtype=bool)
        self.energy = np.empty(n)
        self.lowest = np.empty(n)
        self.round_counts = np.zeros(len(ROUND_ACTIONS), dtype=np.int64)

    def put(self, rows: slice | np.ndarray, action: np.ndarray, out_action: np.ndarray,
            out_round: np.ndarray, out_decision: np.ndarray, out_cert: np.ndarray,
            out_budget: np.ndarray, energy: np.ndarray) -> None:
        self.action[rows], self.decision[rows], self.rounds[rows] = out_action, out_decision, out_round
        self.certified[rows], self.budget[rows] = out_cert, out_budget
        played = np.arange(action.shape[1])[None, :] < out_round[:, None]
        self.energy[rows] = energy[np.arange(energy.shape[0]), out_round - 1]
        self.lowest[rows] = np.where(played, energy, np.inf).min(axis=1)
        counts = np.bincount(action[played].astype(np.intp), minlength=len(ROUND_ACTIONS))
        self.round_counts += counts[: len(ROUND_ACTIONS)]


def check_loss(replay: RunReplay, loss: object) -> np.ndarray | None:
    """None, or ``loss`` validated as a K x K array (finite, >= 0; InputError "loss")."""
    if loss is None:
        return None
    sizes = {c.panel.n_labels for c in replay.cells}
    if len(sizes) != 1:
        raise InputError("loss", "the run's cells have different label sets; one loss cannot replace them all")
    return validate_loss(loss, sizes.pop())


def cell_configs(replay: RunReplay, config: MediatorConfig | None,
                  per_cell_thresholds: bool) -> list[MediatorConfig]:
    """Each cell's effective configuration (see :func:`dcem.analysis.whatif.rescore`)."""
    check("config", config, Instance(MediatorConfig, msg="expected a MediatorConfig, got {type}"), optional=True, error=InputError)
    escalation = mediated_methods()[replay.method]
    out = []
    for cell in replay.cells:
        if config is None:
            out.append(cell.config)
            continue
        changes: dict[str, Any] = {} if escalation else {"escalation": False}
        if per_cell_thresholds:
            changes.update({name: getattr(cell.config, name) for name in THRESHOLD_FIELDS})
        out.append(config.with_changes(**changes) if changes else config)
    return out


_MEMO_PER_CELL = 16  # table settings remembered per cell before the memo is cleared


def _table(replay: RunReplay, index: int, cfg: MediatorConfig,
           loss: np.ndarray | None) -> tuple[RoundState, Targets]:
    """The mediator state of every report tuple of a cell, and each tuple's challenge.

    Memoised on the replay: the table depends only on the panel, the loss and the
    non-policy fields of the configuration, so moving thresholds reuses it.
    """
    cell, cache = replay.cells[index], replay._tables
    key = (index, None if loss is None else loss.tobytes(),
           tuple(getattr(cfg, name) for name in _TABLE_FIELDS))
    hit = cache.get(key)
    if hit is None:
        if len(cache) >= _MEMO_PER_CELL * len(replay.cells):
            cache.clear()
        panel = cell.panel if loss is None else cell.panel.with_loss(loss)
        k, n_agents = panel.n_labels, panel.n_agents
        tuples = np.stack(np.unravel_index(np.arange(k ** n_agents), (k,) * n_agents), -1)
        tab = assess_reports(panel, tuples, cfg)
        hit = cache[key] = (tab, targets(tab, cfg))
    return hit


def _soft_scored(replay: RunReplay, index: int, cfg: MediatorConfig, loss: np.ndarray | None,
                 horizon: int) -> Trajectory:
    """``score_probabilities(panel, cell.probabilities, cfg)`` with the states memoised."""
    cell, cache = replay.cells[index], replay._tables
    assert cell.probabilities is not None
    key = ("soft", index, None if loss is None else loss.tobytes(),
           tuple(getattr(cfg, name) for name in _TABLE_FIELDS), horizon)
    state = cache.get(key)
    if state is None:
        if len(cache) >= _MEMO_PER_CELL * len(replay.cells):
            cache.clear()
        panel = cell.panel if loss is None else cell.panel.with_loss(loss)
        state = cache[key] = assess_probabilities(panel, cell.probabilities[:, :horizon], cfg)
    return score_states(state, cfg)


def score_run(replay: RunReplay, cfgs: list[MediatorConfig], loss: np.ndarray | None) -> RunOutcomes:
    """Outcomes of every case; cells sharing the policy's scalars share one kernel call."""
    out = RunOutcomes(replay.n_cases)
    groups: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
    start = 0
    for i, (cell, cfg) in enumerate(zip(replay.cells, cfgs)):
        rows = (start, start + cell.n_cases)
        start += cell.n_cases
        horizon = min(cell.reports.shape[1], cfg.t_max)
        if cell.codes is None:  # probabilities, or too many report tuples for a table: score directly
            panel = cell.panel if loss is None else cell.panel.with_loss(loss)
            sc = (score_reports(panel, cell.reports, cfg) if cell.probabilities is None
                  else _soft_scored(replay, i, cfg, loss, horizon))
            out.put(slice(*rows), sc.action, sc.outcome_action, sc.outcome_round, sc.outcome_decision,
                    sc.outcome_certified, sc.outcome_budget, sc.energy)
            continue
        key = (horizon, cfg.t_max, cfg.window, cfg.escalation, cfg.delta, cfg.eps_low)
        groups.setdefault(key, []).append((i, rows[0]))
    for (horizon, *_), members in groups.items():
        energy, margin, decision, cert, challenge = _gathered(replay, members, cfgs, loss, horizon)
        cfg0 = cfgs[members[0][0]]
        descent = windowed_descent(energy, cfg0.window)
        action, _steer, budget = policy_over_rounds(energy, descent, cert, challenge, cfg0)
        terminal = action >= Action.STOP_AND_DECIDE
        first = np.argmax(terminal, axis=1)
        n = np.arange(energy.shape[0])
        has_end = terminal[n, first]
        first[~has_end] = horizon - 1
        out_action = action[n, first]
        out_action[~has_end] = Action.PENDING
        out_cert = cert[n, first] & (out_action == Action.STOP_AND_DECIDE)
        out_budget = budget[n, first] & has_end
        rows_idx = np.concatenate([np.arange(r, r + replay.cells[i].n_cases) for i, r in members])
        out.put(rows_idx, action, out_action, first + 1, decision[n, first], out_cert, out_budget, energy)
    return out


def _gathered(replay: RunReplay, members: list[tuple[int, int]], cfgs: list[MediatorConfig],
              loss: np.ndarray | None, horizon: int) -> tuple[np.ndarray, ...]:
    """Per-(case, round) energy, margin, decision, rule 1 and challenge codes of a group.

    When the group's cells share eps_safe, m_safe, s_asym and the steer gate, the
    threshold-free gathers (energy, margin, decision, raw challenge and gate value) are
    memoised on the replay and rule 1 and the challenge eligibility are applied to the
    whole group at once, so moving a threshold costs no per-cell work.
    """
    shared = {(cfgs[i].eps_safe, cfgs[i].m_safe, cfgs[i].s_asym, cfgs[i].steer_gate) for i, _ in members}
    if len(shared) == 1:
        cfg0 = cfgs[members[0][0]]
        key = ("gathered", tuple(i for i, _ in members), None if loss is None else loss.tobytes(),
               tuple(getattr(cfg0, name) for name in _TABLE_FIELDS), horizon)
        hit = replay._tables.get(key)
        if hit is None:
            cols: dict[str, list[np.ndarray]] = {n: [] for n in ("energy", "margin", "decision", "code", "gate")}
            for i, _row in members:
                cell = replay.cells[i]
                assert cell.codes is not None
                tab, tg = _table(replay, i, cfgs[i], loss)
                k = cell.panel.n_labels
                code = (tg.agent * k + tg.current) * k + tg.alternative
                codes = cell.codes[:, :horizon]
                for name, table in (("energy", tab.energy), ("margin", tab.margin), ("decision", tab.decision),
                                    ("code", code), ("gate", tg.value)):
                    cols[name].append(table[codes])
            hit = replay._tables[key] = tuple(np.concatenate(cols[n]) for n in
                                              ("energy", "margin", "decision", "code", "gate"))
        energy, margin, decision, code, gate = hit
        cert = certify(energy, margin, cfg0)
        challenge = np.where((gate >= cfg0.s_asym) & ~cert, code, -1)
        return energy, margin, decision, cert, challenge
    parts: dict[str, list[np.ndarray]] = {"energy": [], "margin": [], "decision": [], "cert": [], "challenge": []}
    for i, _row in members:
        cell, cfg = replay.cells[i], cfgs[i]
        assert cell.codes is not None  # grouped cells use the table path
        tab, tg = _table(replay, i, cfg, loss)
        cert = certify(tab.energy, tab.margin, cfg)
        challenge = challenge_codes(tg, cert, cell.panel.n_labels, cfg)
        codes = cell.codes[:, :horizon]
        for name, table in (("energy", tab.energy), ("margin", tab.margin), ("decision", tab.decision),
                            ("cert", cert), ("challenge", challenge)):
            parts[name].append(table[codes])
    return tuple(np.concatenate(parts[name]) for name in ("energy", "margin", "decision", "cert", "challenge"))


def cell_losses(replay: RunReplay, loss: np.ndarray | None) -> list[np.ndarray]:
    """Each cell's effective loss."""
    return [c.panel.loss if loss is None else loss for c in replay.cells]


def pooled_metrics(replay: RunReplay, sc: RunOutcomes, losses: list[np.ndarray],
                   mask: np.ndarray | None = None) -> dict[str, float]:
    """episode_metrics pooled over cells that may differ in loss or high-risk classes.

    Each distinct (loss, high-risk set) gets its own block of a block-diagonal loss, and
    labels are shifted into their block, so one call gives exact pooled metrics.
    """
    blocks: dict[tuple[bytes, tuple[int, ...], int], int] = {}
    offsets = np.empty(replay.n_cases, dtype=np.int64)
    start = 0
    for cell, loss in zip(replay.cells, losses):
        key = (loss.tobytes(), cell.high_risk, loss.shape[0])
        if key not in blocks:
            blocks[key] = len(blocks)
        offsets[start:start + cell.n_cases] = blocks[key]
        start += cell.n_cases
    sizes = [key[2] for key in blocks]
    base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    big = np.zeros((sum(sizes), sum(sizes)))
    high_all: list[int] = []
    for (loss_bytes, high, k), b in blocks.items():
        big[base[b]:base[b] + k, base[b]:base[b] + k] = np.frombuffer(loss_bytes).reshape(k, k)
        high_all += [int(base[b]) + h for h in high]
    shift = base[offsets]
    sel = slice(None) if mask is None else mask
    return episode_metrics(sc.decision[sel] + shift[sel], sc.action[sel], sc.rounds[sel],
                           replay.truth[sel] + shift[sel], big, high_all, sc.certified[sel])
