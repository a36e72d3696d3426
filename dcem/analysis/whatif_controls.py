"""The what-if page's settings model: the run's own settings, the user's changes to
them, and which parameters a replay cannot be moved by.

A run's cells need not share one configuration: thresholds (eps_safe, eps_low, m_safe,
delta) are fitted per cell.  The page therefore re-scores with *changes*: a parameter the
user has not moved keeps each cell's own value (so an untouched page reproduces the run
exactly and every delta is 0); a parameter the user moved takes the chosen value in every
cell (:func:`changed_configs`, used by :func:`dcem.analysis.whatif.rescore` and
:func:`dcem.analysis.whatif.sweep` with ``changes=``).

:func:`inert_parameters` lists the parameters a replay of the stored reports cannot be
moved by, with the reason, so the page can disable them:

* without escalation (``dcem_noesc``) the energy descent (delta, window) is never read,
  and a challenge (s_asym, steer_gate) only relabels a round that continues anyway;
* with one stored round the descent (defined from round W + 1 >= 2 on) never exists, a
  challenge in round 1 neither changes the recorded reports nor blocks an escalation,
  and there is no later round to move the budget t_max to.
"""
from __future__ import annotations

from typing import Any, Mapping

from dcem.analysis.run_replay import RunReplay
from dcem.core.config import MediatorConfig
from dcem.core.vocabulary import mediated_methods
from common.errors import ConfigError

__all__ = ["PAGE_PARAMETERS", "run_settings", "per_cell_values", "losses_differ", "settings_changes",
           "changed_configs", "inert_parameters", "parameter_notes", "scope_note"]

PAGE_PARAMETERS = ("eps_safe", "eps_low", "m_safe", "delta", "s_asym", "window", "t_max", "alpha", "beta",
                   "gamma", "lambda_pool", "rho_min", "omega_min", "steer_gate")
_CONFIG_FIELDS = frozenset(MediatorConfig.__dataclass_fields__)


def _cell_name(scenario: str, seed: int) -> str:
    return f"{scenario}/seed {seed}"


def run_settings(replay: RunReplay) -> dict[str, Any]:
    """The value every page parameter starts at: the first cell's (for a parameter that
    differs across cells, see :func:`per_cell_values`)."""
    first = replay.cells[0].config
    return {name: getattr(first, name) for name in PAGE_PARAMETERS}


def per_cell_values(replay: RunReplay) -> dict[str, dict[str, Any]]:
    """``{parameter: {"S1/seed 0": value, ...}}`` for each page parameter whose value
    differs across the run's cells (typically the fitted thresholds)."""
    out: dict[str, dict[str, Any]] = {}
    for name in PAGE_PARAMETERS:
        values = {_cell_name(c.scenario, c.seed): getattr(c.config, name) for c in replay.cells}
        if len(set(values.values())) > 1:
            out[name] = values
    return out


def losses_differ(replay: RunReplay) -> bool:
    """Whether the run's cells have different loss matrices (an untouched loss table,
    which shows the first cell's, then keeps each cell's own)."""
    return len({(c.panel.loss.shape, c.panel.loss.tobytes()) for c in replay.cells}) > 1


def settings_changes(values: Mapping[str, Any], reference: Mapping[str, Any],
                     inert: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The parameters whose value differs from the run's (``reference``), leaving out the
    ``inert`` ones (they cannot move a replay)."""
    unknown = sorted(set(values) - set(PAGE_PARAMETERS))
    if unknown:
        raise ConfigError(unknown[0], f"is not a parameter of this page ({', '.join(PAGE_PARAMETERS)})")
    skip = inert or {}
    return {name: value for name, value in values.items()
            if name not in skip and value != reference.get(name)}


def changed_configs(replay: RunReplay, changes: Mapping[str, Any]) -> list[MediatorConfig]:
    """Each cell's own configuration with ``changes`` applied in every cell; a value that
    makes some cell's configuration invalid is refused with a :class:`ConfigError` naming
    the parameter and the cell.  ``dcem_noesc`` keeps escalation off."""
    unknown = sorted(set(changes) - _CONFIG_FIELDS)
    if unknown:
        raise ConfigError(unknown[0], "unknown parameter")
    fixed = dict(changes)
    if not mediated_methods()[replay.method]:
        fixed["escalation"] = False
    out = []
    for cell in replay.cells:
        try:
            out.append(cell.config.with_changes(**fixed) if fixed else cell.config)
        except ConfigError as exc:
            message = str(exc).removeprefix(f"{exc.field}: ")
            where = "" if len(replay.cells) == 1 else f" (cell {_cell_name(cell.scenario, cell.seed)})"
            raise ConfigError(exc.field, f"{message}{where}") from None
    return out


def inert_parameters(max_rounds: int, escalation: bool) -> dict[str, str]:
    """``{parameter: reason}`` for the page parameters that cannot change any re-scored
    outcome of a run with ``max_rounds`` stored rounds replayed with(out) escalation."""
    out: dict[str, str] = {}
    if not escalation:
        reason = "D-CEM without escalation never checks the energy descent, so {} is not used."
        out.update({name: reason.format(name) for name in ("delta", "window")})
        steer = ("Without escalation a challenge only relabels a round that continues anyway, and the "
                 "replayed reports stay as recorded, so {} cannot change an outcome.")
        out.update({name: steer.format(name) for name in ("s_asym", "steer_gate")})
    if max_rounds <= 1:
        reason = "The run stored one round; the energy descent needs two rounds, so {} is not used."
        out.update({name: reason.format(name) for name in ("delta", "window")})
        steer = ("The run stored one round: a challenge there neither changes the recorded reports nor "
                 "blocks an escalation, so {} cannot change an outcome.")
        out.update({name: steer.format(name) for name in ("s_asym", "steer_gate")})
        out["t_max"] = "The run stored one round, so a replay has no later round to move the budget to."
    return out


def parameter_notes(escalation: bool) -> dict[str, str]:
    """``{parameter: note}`` for parameters that stay usable but do less in this mode."""
    if escalation:
        return {}
    return {"eps_low": "Without escalation eps_low decides nothing; it only has to stay above eps_safe."}


def _shown(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def scope_note(changes: Mapping[str, Any], spread: Mapping[str, Mapping[str, Any]], calibration: str = "",
               loss: str = "") -> str:
    """One paragraph saying which parameters apply to every cell and which stay per cell,
    (``calibration``: a calibration set's source) that every cell's panel comes from that
    set, and (``loss``: the page's sentence on the loss table) how the loss differs from
    the run's."""
    kept = [name for name in spread if name not in changes]
    parts = []
    if calibration:
        parts.append(f"Every cell's confusion matrices (and, where the run used the empirical prior, the prior) "
                     f"come from the loaded calibration set ({calibration}); the changes compare with the run's "
                     "own calibration.")
    if changes:
        parts.append("Set for every cell: " + ", ".join(f"{k} = {_shown(v)}" for k, v in changes.items()) + ".")
    if loss:
        parts.append(loss)
    if not changes and (calibration or loss):
        parts.append("No parameter changed: every cell keeps its own settings.")
    elif not changes:
        parts.append("Nothing changed: every cell runs with its own settings, as the run did.")
    if kept:
        ranges = "; ".join(f"{name} {_shown(min(spread[name].values()))} to {_shown(max(spread[name].values()))}"
                           for name in kept)
        parts.append(f"Each cell keeps its own {', '.join(kept)} ({ranges}); a slider starts at the first "
                     "cell's value, and moving it sets that value for every cell.")
    elif not changes:
        parts.append("A parameter you move applies to every cell.")
    return " ".join(parts)
