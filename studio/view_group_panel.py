"""The Group evaluation page's panel on the view group (``docs/group_views.md``): its
members alone, their vote, D-CEM's pool, the group and the references, on the same 200
held-out DDXPlus-8 cases, from the result store."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from sag.views.featured import SHIPPED, shipped_report
from sag.store.tables import SagStore
from studio.literal import literal
from studio.widgets import titled_table

__all__ = ["view_group_panel"]


def view_group_panel(db: SagStore | None) -> None:
    st.write("Three small models each read one part of a DDXPlus-8 case (where the pain is and where it "
             "spreads, the history, what the pain is like); a judge who reads none of it weighs what they say. "
             "Each row answers the same 200 held-out cases: a member alone, the members' majority vote, "
             "D-CEM's pool of the members, each member and their vote after the debate, the group (its judge's "
             "answer), and whole-case references.")
    if db is None:
        return
    by_name = {s.name: s for s in SHIPPED}
    featured = SHIPPED[0].name
    name = featured if len(by_name) == 1 else st.selectbox(
        "View group", list(by_name), key="ev_views_group",
        format_func=lambda n: f"{n} ({by_name[n].title}{', featured' if n == featured else ''})")
    shipment = by_name[name]
    st.markdown(f"**{shipment.name}**: {shipment.title}; group file `{shipment.group}`.")
    report, why = shipped_report(db, shipment)
    _group_rows(report, why, shipment.name)


def _group_rows(report: object | None, why: str, key: str) -> None:
    if report is None:
        st.info(why)
        return
    from sag.views.report import report_frame

    titled_table("Accuracy, the difference to the group and recall per diagnosis", report_frame(report),
                 key=f"ev_views_{key}", wide="answers", empty="No row could be measured.")
    letter, share = report.best_letter  # type: ignore[attr-defined]
    st.caption(f"Chance {report.chance:.3f}; always answering {letter}, the most frequent diagnosis, scores "  # type: ignore[attr-defined]
               f"{share:.3f}. Minus the group: this row's accuracy minus the group's on the same cases, with a "
               "paired bootstrap interval; an interval below 0 means the group did better.")
    changes = pd.DataFrame([{"member": c.agent, "wrong to right": c.wrong_to_right, "right to wrong": c.right_to_wrong,
                             "wrong to another wrong": c.wrong_to_wrong, "unchanged": c.kept}
                            for c in report.changes])  # type: ignore[attr-defined]
    titled_table("What the debate changed (round 0 to round 1)", changes, key=f"ev_views_changes_{key}",
                 empty="No member played two rounds.")
    for kind, (rate, n) in report.cdr.items():  # type: ignore[attr-defined]
        st.write(literal(f"Counterfactual divergence with the {kind} changed: {rate:.3f} over {n} twins (two "
                         f"independent answers with the group's answer shares would differ "
                         f"{report.chance_cdr:.3f})."))  # type: ignore[attr-defined]
