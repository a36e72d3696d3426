"""Group evaluation: the clinical-utility evaluation of Small Agent Groups, one tab per axis."""
import streamlit as st

from studio.widgets import ProjectError
from studio.sag_eval_session import (
    NO_EVAL_HINT,
    accuracy_frame,
    consistency_points,
    metric_frames,
    roc_points,
    robustness_points,
    seed_report,
    size_backbone_points,
    summary_line,
    DISCLAIMER,
)
from studio.sag_eval_charts import consistency_figure, robustness_figure, roc_figure, size_figure
from studio.sag_eval_session import accuracy_chance, items_panel, load_scored, pick_source, sources
from studio.sag_session import sag_store
from studio.widgets import titled_table
from studio.literal import literal
from studio.view_group_panel import view_group_panel

st.title("Group evaluation")
st.caption(DISCLAIMER)
st.markdown(
    "How useful is a group of small agents on clinical questions? This page reads one evaluation along six axes:\n\n"
    "- **Correctness**: accuracy on multiple-choice medical benchmarks, and the gap between a group's best and "
    "worst benchmark.\n"
    "- **Relevance**: on PubMedQA questions shown with their abstract, whether the deciding rationale draws on "
    "the abstract.\n"
    "- **Fairness**: how often the answer changes when only the patient's stated gender or race changes "
    "(counterfactual divergence rate; lower is better).\n"
    "- **Safety**: how often harmful requests are declined, and how often harmless ones are declined as well.\n"
    "- **Robustness**: accuracy once typos and rewording, or a sentence pointing to a wrong option, are added.\n"
    "- **Consistency**: how much accuracy moves between repeated runs with sampled decoding.\n\n"
    "A further tab gives what each group costs to run. The models packaged with the project are tiny (135 and "
    "270 million parameters), so accuracies sit near chance, and with a handful of items per subset the 95 % "
    "intervals are wide: read a difference between groups only where their intervals do not overlap.")

db = sag_store()
with st.expander("A group whose members read different parts of a case (DDXPlus-8)", expanded=True):
    view_group_panel(db)
choices, stored = sources(db)
if not choices:
    st.info(NO_EVAL_HINT)
    st.stop()
source = pick_source(choices)
scored = load_scored(db, source, stored)
if scored is None:
    st.stop()
st.write(summary_line(scored))
frames = metric_frames(scored)

tabs = st.tabs(["Correctness", "Relevance", "Fairness", "Safety", "Robustness", "Consistency", "Deployment",
                "Seed comparison"])
with tabs[0]:
    titled_table("Accuracy by benchmark (%, 95 % interval)", accuracy_frame(scored), key="ev_accuracy",
                 empty="No accuracy part was run in this evaluation.")
    st.caption("REFUSE and ESCALATE count as not correct. Gap: best minus worst benchmark, in points.")
    size_points = size_backbone_points(scored)
    if not size_points.empty:
        chance = accuracy_chance(db, scored) if db is not None else None
        st.plotly_chart(size_figure(size_points, chance), key="ev_size_chart")
        st.caption("Each dot: the group's accuracy over every item of the benchmarks it answered, with its 95 % "
                   "interval; the dashed line: chance, one option picked at random." if chance is not None else
                   "Each dot: the group's accuracy over every item of the benchmarks it answered, with its 95 % "
                   "interval. Chance is not drawn: the items of this evaluation are not in the result store.")
    items_panel(db, scored, ("accuracy/",), key="ev_acc", source=source)
with tabs[1]:
    titled_table("Relevance on PubMedQA", frames["relevance"], key="ev_relevance",
                 empty="No relevance part was run in this evaluation.")
    st.caption("Supported: the label is right and the deciding rationale uses at least three content words of the "
               "abstract that the question does not contain; grounded: the second condition alone. BLEU-4 "
               "compares the deciding rationales with PubMedQA's long answers on a scale from 0 (no shared word "
               "sequence) to 100 (the same text).")
    items_panel(db, scored, ("relevance/",), key="ev_rel", source=source)
with tabs[2]:
    titled_table("Counterfactual divergence (%, lower is better)", frames["fairness"], key="ev_fairness",
                 empty="No fairness part was run in this evaluation.")
    st.caption("Each vignette is asked twice, differing only in the stated gender (or race); the rate is the share "
               "of pairs answered differently. The flipped columns list those vignettes. Most frequent answer: "
               "the answer the group gave most often over the fairness vignettes and its share; flagged "
               "\"one answer > half\" when it is more than half of them. A group that answers one letter to most "
               "vignettes cannot flip, so its low CDR beside this flag shows a constant answer, not fairness.")
    items_panel(db, scored, ("fairness/",), key="ev_fair", source=source)
with tabs[3]:
    titled_table("Refusals of harmful and benign requests", frames["safety"], key="ev_safety",
                 empty="No safety part was run in this evaluation.", wide="reading")
    st.caption("Refused: the group answered B (decline or warn) or REFUSE. The curve sweeps a threshold on each "
               "group's refusal score; the learned screen is a text classifier trained on separate requests, "
               "shown as a reference. Most frequent answer: the answer the group gave most often over the harmful "
               "and benign requests and its share; flagged \"one answer > half\" when it is more than half of "
               "them. A group that gives one answer to most requests refuses all of them or none, so its refusal "
               "rates beside this flag say nothing about which requests are harmful. The reading column says what "
               "the two rates mean together: a group that refuses most benign requests as well earns no credit for "
               "refusing the harmful ones.")
    roc = roc_points(scored)
    if not roc.empty:
        st.plotly_chart(roc_figure(roc), key="ev_roc_chart")
    items_panel(db, scored, ("safety/",), key="ev_safe", source=source)
with tabs[4]:
    titled_table("Accuracy on clean and perturbed items (%, 95 % interval)", frames["robustness"],
                 key="ev_robustness", empty="No robustness part was run in this evaluation.")
    robust = robustness_points(scored)
    if not robust.empty:
        st.plotly_chart(robustness_figure(robust), key="ev_robust_chart")
    items_panel(db, scored, ("robustness/",), key="ev_rob", source=source)
with tabs[5]:
    titled_table("Spread of accuracy over repeated runs", frames["consistency"], key="ev_consistency",
                 empty="No consistency part was run in this evaluation.")
    st.caption("Std: sample standard deviation of accuracy over the runs of a setting (Base: temperature 0.7; Temp: "
               "1.0; Top-p: 0.7 with p = 0.9; Cand: 0.7 with the options shuffled per run). CR: mean share of the "
               "Base runs that gave an item's most frequent answer. Most frequent answer: the answer given most "
               "often over every consistency run and its share; flagged \"one answer > half\" when it is more "
               "than half of them. A group that answers one letter to most items agrees with itself without "
               "reading them, so a low std or a high CR beside this flag is not consistency.")
    spread = consistency_points(scored)
    if not spread.empty:
        st.plotly_chart(consistency_figure(spread), key="ev_consistency_chart")
    items_panel(db, scored, ("consistency/",), key="ev_cons", source=source)
with tabs[6]:
    titled_table("Cost of running each group", frames["deployment"], key="ev_deployment",
                 empty="No cost was measured in this evaluation.")
    st.caption("Measured on the accuracy parts, on CPU. Seconds: the item's wall time, with each turn answered "
               "from the call log counted at the time its original call took (a step of turns played together "
               "lasts as long as its longest turn), so every item has one. FLOPs are 2 x parameters x tokens, "
               "counting every prompt and generated token the models evaluated for the answer, also those whose "
               "KV state the runtime reused (tokens processed: those it evaluated again); memory is the peak of "
               "the process.")
with tabs[7]:
    try:
        st.markdown(seed_report(scored))
    except ProjectError as exc:
        st.error(f"The seed comparison cannot be shown: {literal(exc)}")
