"""The what-if page's results: metrics against the run's own settings, the per-scenario
table, the outcome mix and the trade-off sweep -- current, or the last valid ones greyed
while an input is refused."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd
import streamlit as st

from dcem.analysis.charged_risk import CHARGED, DEFAULT_COST, with_charged_column, with_charged_metrics
from studio.views.escalation_reason import all_escalated_reason
from studio.views.glossary import metric_words, term_help
from studio.views.loss_input import loss_change
from dcem.analysis.whatif import SWEEP_PARAMETERS, RunReplay, pair_moves, rescore, sweep, sweep_grid
from dcem.analysis.whatif_controls import run_settings
from common.errors import ProjectError
from studio.memo import ValidSettings, last_valid, original_for, remember_valid, sweep_for
from studio.whatif_settings import slider_bounds, t_max_top, window_top
from studio.views.metric_tables import is_percent
from studio.tables import MISSING, metric_table
from studio.whatif_charts import action_mix_figure, tradeoff_figure
from studio.whatif_inputs import refusal_text
from studio.escalation_cost import escalation_cost
from studio.views import session_keys as keys

__all__ = ["STALE_NOTE", "settle", "show_results", "metric_value", "metric_change", "metrics_frame", "sweep_caption"]

STALE_NOTE = ("Showing the last valid settings (greyed): the results below are from before the refused "
              "input. Fix it, or press \"Reset to run settings\", to update them.")
_GREY = "<style>.st-key-wi_results {opacity: 0.45; filter: grayscale(1);}</style>"
_HEADLINE = ("certified_rate", "decided_rate", "escalation_rate", "harmful_consensus", "system_risk", CHARGED)


def settle(replay: RunReplay, values: Mapping[str, Any], changes: Mapping[str, Any],
           loss: np.ndarray | None, refused: Exception | None) -> tuple[ValidSettings | None, bool]:
    """Re-score under the current settings and remember them as the last valid ones, or
    show why they are refused (``refused``: the loss table's refusal, already shown) and
    fall back to the last valid ones.  Returns ``(settings, stale)``."""
    if refused is None and loss is not None:
        try:
            kept = loss_change(loss, replay.cells[0].panel.loss)
            result = rescore(replay, changes=changes, loss=kept)
        except ProjectError as exc:
            st.error(f"Settings refused. {refusal_text(exc)}")
        else:
            return remember_valid(replay, ValidSettings(dict(changes), kept, dict(values), result)), False
    return last_valid(replay), True


def metric_value(key: str, value: float) -> str:
    """A metric as shown on the page: shares in percent, the losses and rounds as numbers."""
    return f"{value:.1%}" if is_percent(key) else f"{value:.3f}"


def metric_change(key: str, change: float) -> str:
    """A metric's change against the run's own settings, in the metric's unit."""
    return f"{change * 100:+.1f} points vs original" if is_percent(key) else f"{change:+.3f} vs original"


def _metrics(current: Mapping[str, float], original: Mapping[str, float], n_cases: int, cost: float) -> None:
    """The headline metrics and the table, the risk with escalation at ``cost`` beside the system risk."""
    current, original = with_charged_metrics(current, cost), with_charged_metrics(original, cost)
    st.subheader(f"Metrics over {n_cases} cases")
    for col, key in zip(st.columns(len(_HEADLINE)), _HEADLINE):
        change = current[key] - original[key]
        col.metric(metric_words(key, escalation_cost=cost), metric_value(key, current[key]), metric_change(key, change),
                   delta_color="off", delta_arrow="off" if abs(change) < 5e-4 else "auto", help=term_help(key))
    st.dataframe(metrics_frame(current, original, cost), placeholder=MISSING, key="wi_metrics", hide_index=True,
                 column_config={"metric": st.column_config.TextColumn("Metric"),
                                "unit": st.column_config.TextColumn("Unit"),
                                **{c: st.column_config.Column(c.capitalize()) for c in _VALUE_COLUMNS}})


_VALUE_COLUMNS = ("current", "original settings", "change")


def metrics_frame(current: Mapping[str, float], original: Mapping[str, float],
                  escalation_cost: float = DEFAULT_COST) -> Any:
    """The metrics table: shares in percent with one decimal ("77.9 %", a change in
    points), losses and rounds as numbers with three; the values stay numbers (a share
    times 100), only their display is formatted, row by row.  The risk with escalation is
    named with ``escalation_cost``, the cost its values were computed at."""
    scale = pd.Series({k: 100.0 if is_percent(k) else 1.0 for k in current})
    frame = pd.DataFrame({"metric": {k: metric_words(k, escalation_cost=escalation_cost) for k in current},
                          "unit": {k: "% of cases" if is_percent(k) else ("rounds" if k == "avg_rounds" else "loss")
                                   for k in current},
                          "current": pd.Series(current) * scale, "original settings": pd.Series(original) * scale})
    frame = frame.assign(change=frame["current"] - frame["original settings"])
    shares = [k for k in frame.index if is_percent(str(k))]
    others = [k for k in frame.index if not is_percent(str(k))]
    styler = frame.style
    styler = styler.format("{:.1f} %", subset=pd.IndexSlice[shares, ["current", "original settings"]])
    styler = styler.format("{:+.1f} points", subset=pd.IndexSlice[shares, ["change"]])
    styler = styler.format("{:.3f}", subset=pd.IndexSlice[others, ["current", "original settings"]])
    return styler.format("{:+.3f}", subset=pd.IndexSlice[others, ["change"]])


def _per_scenario(frame: pd.DataFrame, cost: float) -> None:
    shown = with_charged_column(frame, cost)
    for name in shown.columns:
        if is_percent(str(name)):
            shown[name] = shown[name] * 100.0
    table, config = metric_table(shown, ("scenario",), escalation_cost=cost)
    config["n_cases"] = st.column_config.NumberColumn("Cases", format="%d", help="Cases in the scenario.")
    st.dataframe(table, placeholder=MISSING, hide_index=True, column_config=config, key="wi_scenarios")


def _sweep_bounds(replay: RunReplay, parameter: str) -> tuple[float, float]:
    """The swept range: the parameter's slider range."""
    own = run_settings(replay)[parameter]
    if parameter == "t_max":
        return 1, t_max_top(int(own), replay.max_rounds)
    if parameter == "window":
        return 1, window_top(int(own))
    low, high, _ = slider_bounds(parameter, float(own))
    return low, high


def _moving_parameter(replay: RunReplay, valid: ValidSettings, options: list[str]) -> str:
    """The first parameter whose sweep moves the escalated share or the harmful consensus
    (the page opens on a curve, not on a point), else the first one."""
    for parameter in options:
        others = {k: v for k, v in valid.changes.items() if k != parameter}
        grid = sweep_grid(replay, parameter, others, *_sweep_bounds(replay, parameter))
        if len(grid) > 1:
            curve = sweep(replay, parameter=parameter, values=grid, changes=others, loss=valid.loss)
            if curve.loc[curve["valid"], ["escalation_rate", "harmful_consensus"]].nunique().max() > 1:
                return parameter
    return options[0]


def _tradeoff(replay: RunReplay, valid: ValidSettings, inert: Mapping[str, str], col: Any, cost: float) -> None:
    options = [p for p in SWEEP_PARAMETERS if p not in inert]
    if st.session_state.get(keys.WI_SWEEP_PARAM) not in options:
        st.session_state[keys.WI_SWEEP_PARAM] = _moving_parameter(replay, valid, options)
    parameter = col.selectbox("Sweep parameter", options, key="wi_sweep_param",
                              help="Each point re-scores the run with this parameter set to the point's value "
                                   "in every cell; the other settings stay as they are now.")
    current = float(valid.values[parameter])
    others = {k: v for k, v in valid.changes.items() if k != parameter}
    low, high = _sweep_bounds(replay, parameter)
    grid = sweep_grid(replay, parameter, others, low, high)
    if not len(grid):
        col.info(f"No value of {parameter} from {low:g} to {high:g} is accepted by every cell with the other "
                 "settings as they are now, so there is no sweep to draw.")
        return
    curve = with_charged_column(sweep_for(replay, parameter, valid.changes, valid.loss, grid), cost)
    y = col.radio("Against", ["harmful_consensus", "system_risk", CHARGED], horizontal=True, key="wi_sweep_y",
                  format_func=lambda name: metric_words(name, escalation_cost=cost))
    _, original = original_for(replay)
    col.plotly_chart(tradeoff_figure(curve, parameter, current, with_charged_metrics(valid.result.metrics, cost), y,
                                     with_charged_metrics(original, cost), escalation_cost=cost), key="wi_tradeoff")
    col.caption(sweep_caption(curve, parameter, y, moved=pair_moves(replay, others, parameter, grid),
                              escalation_cost=cost))


_PARTNER = {"eps_safe": ("eps_low", "raised to just above"), "eps_low": ("eps_safe", "lowered to just below")}


def sweep_caption(curve: pd.DataFrame, parameter: str, y: str, *, moved: int = 0,
                  escalation_cost: float | None = None) -> str:
    """What the sweep covers, and in words why it is one point when every value gives the
    same outcome; ``moved``: how many values moved the other eps threshold in some cell."""
    ok = curve[curve["valid"]]
    span = f"{parameter} from {ok['value'].min():.3g} to {ok['value'].max():.3g}"
    left_out = int((~curve["valid"]).sum())
    out = f"{len(ok)} values of {span}, the range every cell accepts with the other settings as they are now."
    if left_out:
        out += f" {left_out} values inside it make some cell's settings invalid and are left out."
    if moved and parameter in _PARTNER:
        other, how = _PARTNER[parameter]
        out += (f" At {moved} of these values some cell's own {other} is not on the right side of {parameter}; "
                f"there it is {how} the swept {parameter}, for that point only.")
    if len(ok) > 1 and ok[["escalation_rate", y]].nunique().max() == 1:
        first = ok.iloc[0]
        out += (f" Every value gives the same escalated share ({first['escalation_rate']:.1%}) and "
                f"{metric_words(y, escalation_cost=escalation_cost).lower()} ({metric_value(y, first[y])}), so the "
                "curve is a single point")
        if ok["certified_rate"].nunique() > 1:
            out += (f": what {parameter} moves here is the certified share ({ok['certified_rate'].min():.1%} to "
                    f"{ok['certified_rate'].max():.1%}), and a case it no longer certifies is still decided, later "
                    "or at the round budget, not escalated.")
        else:
            out += f": no case of this run changes its outcome anywhere in this range of {parameter}."
    return out


def show_results(replay: RunReplay, valid: ValidSettings, inert: Mapping[str, str], *, stale: bool,
                 refitted: bool = False) -> None:
    """Everything computed from ``valid``; greyed, under :data:`STALE_NOTE`, when ``stale``
    (``refitted``: the replay's thresholds were refitted for the page's loss)."""
    if stale:
        st.warning(STALE_NOTE)
        st.markdown(_GREY, unsafe_allow_html=True)
    before, original = original_for(replay)
    cost = escalation_cost()
    with st.container(key="wi_results"):
        _metrics(valid.result.metrics, original, replay.n_cases, cost)
        if reason := all_escalated_reason(valid.result.outcomes):
            fitted = (" The run's thresholds were fitted under its own loss matrix; the changed loss moves every "
                      "energy (the thresholds can be refitted for it under the loss matrix)."
                      if valid.loss is not None and not refitted else "")
            st.warning(reason + fitted)
        _per_scenario(valid.result.per_scenario, cost)
        c1, c2 = st.columns(2)
        c1.plotly_chart(action_mix_figure(valid.result.outcome_mix, before.outcome_mix), key="wi_mix")
        _tradeoff(replay, valid, inert, c2, cost)
