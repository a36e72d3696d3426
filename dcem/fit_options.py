"""The command-line choice of how thresholds are fitted, shared by ``python -m dcem run
synthetic`` and ``python -m dcem_clinical run``: ``--fit eq1`` (the costed objective of
eq. 1) or ``--fit ltt`` with its target (:class:`dcem.calibration.risk_control.RiskTarget`); and the report
commands' ``--escalation-cost`` (:mod:`dcem.analysis.charged_risk`)."""
from __future__ import annotations

import argparse

from common.cli_args import float_in
from common.errors import ProjectError
from dcem.analysis.charged_risk import DEFAULT_COST, MAX_COST
from dcem.calibration.risk_control import FWER_METHODS, RISKS, RiskTarget

__all__ = ["add_fit_options", "risk_target_from_args", "add_escalation_cost"]


def add_fit_options(p: argparse.ArgumentParser, *, where: str) -> None:
    """``--fit``, ``--risk``, ``--alpha``, ``--risk-delta`` and ``--fwer``; ``where`` names the
    cases the thresholds are fitted on (for the help)."""
    p.add_argument("--fit", choices=["eq1", "ltt"], default="eq1",
                   help=f"how the thresholds are chosen on {where}: eq1 minimises the costed objective of eq. (1); "
                        "ltt (Learn-then-Test) chooses the setting that decides most among those whose --risk is "
                        "at most --alpha with probability at least 1 - --risk-delta (none passing: every case "
                        "is escalated)")
    p.add_argument("--risk", choices=RISKS, default=None,
                   help="with --fit ltt: the controlled rate (default harmful_consensus)")
    p.add_argument("--alpha", type=float_in(0.0, 1.0), default=None, help="with --fit ltt: the bound (default 0.05)")
    p.add_argument("--risk-delta", type=float_in(0.0, 1.0), default=None,
                   help="with --fit ltt: the chance the bound may fail (default 0.1)")
    p.add_argument("--fwer", choices=FWER_METHODS, default=None, help="with --fit ltt: the family-wise error "
                   "control over the settings (default fixed_sequence; bonferroni for harmful_among_decided)")


def risk_target_from_args(args: argparse.Namespace) -> RiskTarget | None:
    """The Learn-then-Test target of ``--fit ltt`` (None for the eq. (1) fit); a target
    option without ``--fit ltt`` is refused rather than ignored."""
    if args.fit == "eq1":
        given = [f for f, v in (("--risk", args.risk), ("--alpha", args.alpha), ("--risk-delta", args.risk_delta),
                                ("--fwer", args.fwer)) if v is not None]
        if given:
            raise ProjectError(f"{given[0]} sets the Learn-then-Test target: add --fit ltt")
        return None
    risk = args.risk or "harmful_consensus"
    fwer = args.fwer or ("bonferroni" if risk == "harmful_among_decided" else "fixed_sequence")
    return RiskTarget(risk=risk, alpha=0.05 if args.alpha is None else args.alpha,
                      delta=0.1 if args.risk_delta is None else args.risk_delta, fwer=fwer)


def add_escalation_cost(p: argparse.ArgumentParser) -> None:
    """``--escalation-cost`` of the report commands: what the charged risk counts an
    escalated case at, beside the system risk that counts it 0."""
    p.add_argument("--escalation-cost", type=float_in(0.0, MAX_COST), default=DEFAULT_COST, metavar="C",
                   help=f"the reports show system risk (escalation free: an escalated case counts 0) beside the "
                        f"risk with escalation at C (each escalated case counts C; default {DEFAULT_COST:g}, the "
                        "cost the thresholds of eq. 1 are fitted with)")
