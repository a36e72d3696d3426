"""The trade-off chart of risk control: each setting of one cell's CAL half (decided share
against the controlled rate), the settings that passed the test, the rate bound, the
chosen setting, and both settings on the TEST half.  A share of cases is drawn in percent
(as the rest of the page shows shares), the system risk as a mean loss."""
from __future__ import annotations

from typing import Any, Mapping

import plotly.graph_objects as go

from studio.whatif_charts import LEGEND_ABOVE

__all__ = ["risk_region_figure"]


def risk_region_figure(curve: Mapping[str, Any], alpha: float, rate_words: str, *, share: bool = True) -> go.Figure:
    """``alpha``: the rate bound; ``share``: the rate is a share of cases (percent axis)."""
    rate = ".1%" if share else ".3f"
    fig = go.Figure()
    for passed, name, color in ((True, "passed the test (guaranteed)", "#1b9e77"),
                                (False, "not shown to be safe", "#bbbbbb")):
        pick = [i for i, p in enumerate(curve["passed"]) if p is passed]
        fig.add_trace(go.Scatter(x=[curve["decided"][i] for i in pick], y=[curve["rate"][i] for i in pick],
                                 mode="markers", name=name, marker={"color": color, "size": 7},
                                 text=[f"energy ≤ {curve['lam'][i]:.3g}" for i in pick],
                                 hovertemplate="%{text}<br>decided %{x:.1%}<br>rate %{y:" + rate + "}<extra></extra>"))
    if curve["chosen"] is not None:
        x, y, lam = curve["chosen"]
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", name=f"chosen (energy ≤ {lam:.3g}), CAL",
                                 marker={"symbol": "star", "size": 16, "color": "#d95f02"}))
    for key, name, symbol in (("test", "chosen, TEST half", "diamond"), ("own", "run's thresholds, TEST half",
                                                                         "x")):
        x, y = curve[key]
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", name=name,
                                 marker={"symbol": symbol, "size": 12, "color": "#7570b3"}))
    bound = f"{alpha:.1%}" if share else f"{alpha:.3f}"
    fig.add_hline(y=alpha, line_dash="dash", line_color="#d95f02", annotation_text=f"rate bound {bound}")
    fig.update_layout(legend=LEGEND_ABOVE, margin={"t": 110, "b": 40, "l": 60, "r": 20}, height=430,
                      xaxis={"title": "decided (% of cases)", "tickformat": ".0%", "range": [-0.02, 1.02]},
                      yaxis={"title": rate_words + ("" if share else " (mean loss)"), "rangemode": "tozero",
                             "tickformat": rate})
    return fig
