"""Every name the dashboard keeps in ``st.session_state``, in one place.

A page or helper that reads or writes the session by name uses one of these constants (a
test fails on a literal key).  Widget keys a page only passes as ``key=`` belong to their
widgets; those the code also sets or reads are here.  The values are what earlier versions
used, so a person's session survives an upgrade of the code.
"""
from __future__ import annotations

# every page: which run the pickers open on, and each picker's own pick
CURRENT_RUN = "current_run"
RUN_PICKS = "_run_picks"
RUN_SHOWN = "_run_shown"
MEMO_SLOTS = "_memo"  # the what-if memo's replays and re-scorings

# every page showing a risk: what an escalated case is charged in the risk with escalation
ESCALATION_COST = "escalation_cost"

# Experiments: the last launch, the running one, the one Run asked for
EXP_LAUNCH = "exp_launch"
EXP_ACTIVE = "exp_active"
EXP_PENDING = "exp_pending"

# Case walkthrough
WALK_RUN = "run_id"
WALK_CASE = "walk_case"
WALK_LINK_SEEN = "walk_link_seen"

# Escalation review: what to set and say on the next page run after a save
REVIEW_PENDING = "rv_pending"
REVIEW_DONE = "rv_done"
REVIEW_MERGE = "rv_merge"  # reviews waiting to join the calibration set until their differences are confirmed

# Calibration sets
CALIB_SET = "calib_set"
CALIB_REVIEWED = "calib_reviewed"  # (the set, how many reviewed cases it holds) after the review page added some
CALIB_PENDING = "calib_pending"  # a set loaded over one holding reviewed cases, until the replacement is confirmed

# Loss and thresholds
WI_CALIB = "wi_calib"
WI_FOR_RUN = "wi_for_run"
WI_RESET_NOTE = "wi_reset_note"
WI_WINDOW = "wi_window"
WI_T_MAX = "wi_t_max"
WI_STEER_GATE = "wi_steer_gate"
WI_LOSS = "wi_loss"
WI_LOSS_EDITOR = "wi_loss_editor"  # the editor's key is this plus its version, which only grows
WI_LOSS_EDITOR_VERSION = "wi_loss_editor_version"
WI_HIGH = "wi_high"
WI_LHIGH = "wi_lhigh"  # the l_high field's text
WI_LHIGH_VALUE = "wi_lhigh_value"  # the last l_high read from it
WI_LHIGH_NOTE = "wi_lhigh_note"  # why the text typed there was refused
WI_REFIT = "wi_refit"
WI_SWEEP_PARAM = "wi_sweep_param"
WI_PRESET_NOTES = "wi_preset_notes"

# Models
GPU_LAYERS = "n_gpu_layers"
MODELS_EXTRA_KEYS = "models_extra_keys"
MODELS_FACTS = "models_facts"
MODELS_HF_DONE = "models_hf_done"
MODELS_TEST_RESULT = "models_test_result"

# Agent group
SAG_MODELS = "sag_models"  # an optional hook that gives a launch its runners (tests, a warm session)
AG_RUN = "ag_run"
AG_CMP_A = "ag_cmp_a"
AG_CMP_B = "ag_cmp_b"
AG_CMP_FOR = "ag_cmp_for"

# Group evaluation
EVAL_EXPORTS = "sag_eval_exports"
EVAL_SOURCE = "ev_source"
EVAL_NEXT_SOURCE = "ev_source_next"
EVAL_IMPORTED = "ev_imported"

# What-if: thresholds with a guarantee (Learn-then-Test)
WI_RISK_ON = "wi_risk_on"
WI_RISK = "wi_risk"
WI_RISK_ALPHA = "wi_risk_alpha"
WI_RISK_DELTA = "wi_risk_delta"
WI_RISK_FWER = "wi_risk_fwer"
WI_RISK_CELL = "wi_risk_cell"

# Experiments: how a launched run's thresholds are fitted
EXP_FIT = "exp_fit"
EXP_RISK = "exp_risk"
EXP_RISK_ALPHA = "exp_risk_alpha"
EXP_RISK_DELTA = "exp_risk_delta"
EXP_RISK_FWER = "exp_risk_fwer"
