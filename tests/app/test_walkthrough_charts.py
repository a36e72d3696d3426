"""The walkthrough's figures: labelled thresholds, a key for every outline and colour,
disjoint palettes, horizontal bars and wrapped names from eight labels on."""
from __future__ import annotations

import numpy as np
import pandas as pd

from studio.charts import (
    AGENT_PALETTE,
    HORIZONTAL_AT,
    OUTLINES,
    TERM_COLOURS,
    agent_probability_figure,
    belief_figure,
    confusion_figure,
    energy_figure,
    probability_top,
    threshold_shifts,
    wrap_label,
)

DDX8 = ("Anaphylaxis", "Pulmonary_embolism", "NSTEMI_STEMI", "Myocarditis", "URTI", "Viral_pharyngitis", "GERD",
        "Bronchitis")


def _rounds() -> pd.DataFrame:
    return pd.DataFrame({"round": [1, 2, 3], "e_disagreement": [0.5, 0.4, 0.2], "e_risk": [0.9, 0.6, 0.3],
                         "e_margin": [0.8, 0.5, 0.2], "energy": [2.2, 1.5, 0.7]})


def _belief(labels: tuple[str, ...]):  # type: ignore[no-untyped-def]
    k = len(labels)
    post = [list(np.full(k, 1 / k)), list(np.full(k, 1 / k))]
    return belief_figure(labels, post, list(np.full(k, 1 / k)), [0, 1], [2, 2], 1, names=["Agent A", "Agent B"])


def test_thresholds_are_labelled_lines_with_their_values() -> None:
    fig = energy_figure(_rounds(), 2, eps_safe=0.6, eps_low=1.2)
    texts = [a.text for a in fig.layout.annotations]
    assert "eps_safe 0.60" in texts and "eps_low 1.20" in texts
    lines = {round(s.y0, 6) for s in fig.layout.shapes if s.type == "line" and s.y0 == s.y1}
    assert {0.6, 1.2} <= lines
    close = energy_figure(_rounds(), 2, eps_safe=0.6001, eps_low=0.6002)
    assert {"eps_safe 0.6001", "eps_low 0.6002"} <= {a.text for a in close.layout.annotations}
    shift = {a.text: a.yshift for a in close.layout.annotations}
    assert shift["eps_low 0.6002"] - shift["eps_safe 0.6001"] >= 15.9  # close lines: labels pushed apart
    assert all(a.xref == "paper" and a.x >= 1.0 for a in close.layout.annotations)  # right of the bars
    assert threshold_shifts(0.6, 1.2, 2.0) == (0.0, 0.0)  # far apart: each label on its line
    keys = [t.name for t in fig.data if t.hoverinfo == "skip"]  # legend-only entries
    assert any("eps_safe 0.60" in k and "green band" in k for k in keys)
    assert any("eps_low 1.20" in k and "red band" in k for k in keys)


def test_the_probability_axis_fits_the_bars() -> None:
    small = belief_figure(("a", "b", "c"), [[0.12, 0.08, 0.1]], [0.15, 0.05, 0.1], [0], [1], 0)
    assert tuple(small.layout.yaxis.range) == (0, 0.2)  # bars of at most 0.15: the axis stops at 0.2
    assert probability_top([0.95]) == 1.0 and probability_top([0.01]) == 0.1 and probability_top([0.5]) == 0.6


def test_agents_and_energy_terms_have_disjoint_palettes() -> None:
    assert not set(AGENT_PALETTE) & set(TERM_COLOURS.values())
    energy = energy_figure(_rounds(), 3, eps_safe=0.6, eps_low=1.2)
    term_colours = {t.marker.color for t in energy.data if t.type == "bar"}
    belief = _belief(("a", "b", "c"))
    agent_colours = {t.marker.color for t in belief.data if t.type == "bar" and "posterior" in t.name}
    assert len(term_colours) == 3 and len(agent_colours) == 2 and not term_colours & agent_colours


def test_every_outline_colour_has_a_key() -> None:
    fig = _belief(("a", "b", "c"))
    used = {c for t in fig.data if t.type == "bar" for c in t.marker.line.color if not c.startswith("rgba")}
    keyed = {t.marker.line.color for t in fig.data if t.type == "scatter" and "outline" in t.name}
    assert used == set(OUTLINES.values()) and used <= keyed
    assert [t.name for t in fig.data if t.type == "bar"][:2] == ["Agent A posterior", "Agent B posterior"]
    probs = agent_probability_figure(("a", "b"), ["A"], [[0.3, 0.7]], ["b"])
    assert any(t.type == "scatter" and "outline" in t.name and t.marker.line.color == OUTLINES["report"]
               for t in probs.data)


def test_eight_labels_turn_the_bars_horizontal_with_wrapped_names() -> None:
    assert HORIZONTAL_AT <= len(DDX8)
    wide = _belief(DDX8)
    bars = [t for t in wide.data if t.type == "bar"]
    assert all(t.orientation == "h" for t in bars) and "Pulmonary<br>embolism" in bars[0].y
    assert not any("_" in y for y in bars[0].y)
    narrow = _belief(("a", "b", "c"))
    assert all(t.orientation != "h" for t in narrow.data if t.type == "bar")
    probs = agent_probability_figure(DDX8, ["A", "B"], [list(np.full(8, 0.125)), None], ["GERD", None])
    assert [t.orientation for t in probs.data if t.type == "bar"] == ["h"]
    heat = confusion_figure(np.eye(8), DDX8, "A")
    assert "Viral<br>pharyngitis" in heat.data[0].x and heat.data[0].showscale


def test_wrap_label() -> None:
    assert wrap_label("Viral_pharyngitis") == "Viral<br>pharyngitis"
    assert wrap_label("URTI") == "URTI" and wrap_label("") == ""
    assert wrap_label("Anaphylaxis", 6) == "Anaphylaxis"  # a long word is never cut
