"""The synthetic world as seed 003 specifies it (issue: six departures removed).

1. agents sample from p ∝ exp(s) (App. B.7), the sharpness is a named variant;
2. Table 5 is read AT round T (App. F);
3. a CONTINUE round is one round of the agents' own exchange, the same as free discussion;
4. steering moves only the rules an agent holds and never makes a weight negative;
5. the peer influence kappa is on the rule-score scale;
6. eq. (19) is the "blend" compliance model.
"""
from __future__ import annotations

import numpy as np
import pytest

from dcem.core.config import MediatorConfig
from dcem.core.deliberation import SteerRequest, deliberate
from dcem.core.panel import Panel
from dcem.core.steering import SteeringConfig, blend_compliance, recommend, update_mask
from common.errors import ConfigError, InputError
from dcem.synthetic.experiment import checkpoint_reading, run_cell
from dcem.synthetic.free_discussion import free_discussion
from dcem.synthetic.generator import generate, synthetic_loss
from dcem.synthetic.rule_agents import AGENT_SHARPNESS, SHARPENED, RuleAgents, scenario
from dcem.synthetic.spec import WORLDS, SyntheticSpec


def _features(**on: int) -> np.ndarray:
    """One case with the named features x0..x9 set (the rest 0), shape (1, 10)."""
    x = np.zeros((1, 10), dtype=np.int8)
    for name in on:
        x[0, int(name[1:])] = 1
    return x


def _panel() -> Panel:
    conf = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    return Panel(("k0", "k1", "k2"), np.stack([conf, conf]), np.full(3, 1 / 3), synthetic_loss())


# 1. sampling distribution -------------------------------------------------------

def test_default_agents_sample_from_exp_of_the_rule_scores() -> None:
    """S3b agent 1 on x1 = x3 = x4 = 1: its rules k0 <- x3&x4 (1.5), k1 <- x3&x4 (1.4) and
    k2 <- x1&x3 (1.5) fire, so s = (1.5, 1.4, 1.5) and p = exp(s) / sum exp(s)."""
    assert AGENT_SHARPNESS == 1.0 and WORLDS == {"seed": 1.0, "sharpened": SHARPENED, "map": 1.0}
    assert SyntheticSpec().sharpness == 1.0
    s = np.array([1.5, 1.4, 1.5])
    expected = np.exp(s) / np.exp(s).sum()
    agents = RuleAgents(scenario("S3b"), _features(x1=1, x3=1, x4=1), np.random.default_rng(0))
    np.testing.assert_allclose(agents.rule_scores()[0, 0], s)
    np.testing.assert_allclose(agents.probabilities()[0, 0], expected, rtol=1e-12)
    many = RuleAgents(scenario("S3b"), np.repeat(_features(x1=1, x3=1, x4=1), 60000, axis=0),
                      np.random.default_rng(1))
    freq = np.bincount(many.report(1)[:, 0], minlength=3) / 60000
    np.testing.assert_allclose(freq, expected, atol=0.01)
    sharp = RuleAgents(scenario("S3b"), _features(x1=1, x3=1, x4=1), np.random.default_rng(0),
                       sharpness=SHARPENED)
    np.testing.assert_allclose(sharp.probabilities()[0, 0], np.exp(3 * s) / np.exp(3 * s).sum(), rtol=1e-12)


def test_sharpened_world_is_one_named_option() -> None:
    assert SyntheticSpec(sharpness=3.0).run_id() != SyntheticSpec().run_id()
    cell = run_cell("S2", 0, n_train=2000, n_eval=30, ablation=False, sharpness=SHARPENED)
    assert cell.info["sharpness"] == 3.0
    assert run_cell("S2", 0, n_train=2000, n_eval=30, ablation=False).info["sharpness"] == 1.0
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ConfigError, match="sharpness"):
            SyntheticSpec(sharpness=bad)


# 2. Table 5 at T ----------------------------------------------------------------

def test_table5_reads_the_signal_at_round_t_not_the_first_terminal_one() -> None:
    """Truth k1.  Round 1 both agents say k1 and the (generous) thresholds certify it;
    by round 4 both say k0.  The App. F reading at T = 4 charges round 4's decision k0
    (loss 1); the first-terminal view keeps the certified k1 of round 1 (loss 0)."""
    cfg = MediatorConfig(eps_safe=50.0, eps_low=60.0, m_safe=0.0, s_asym=1e9, prior="uniform")
    reports = np.array([[[1, 1], [1, 1], [0, 1], [0, 0]]])
    row = checkpoint_reading(_panel(), reports, np.array([1]), cfg, 4)
    assert row["risk_at_T"] == 1.0 and row["risk"] == 0.0
    assert row["A1"] == 0.0 and row["A2"] == 0.0
    assert row["escalation_at_T"] == 0.0 and row["escalation_rate"] == 0.0
    # an escalation signal at T counts at T even when an earlier round decided
    esc = MediatorConfig(eps_safe=0.5, eps_low=0.6, m_safe=0.0, s_asym=1e9, delta=1.0, window=1,
                         prior="uniform")
    row = checkpoint_reading(_panel(), np.array([[[1, 2], [0, 2], [1, 0], [2, 0]]]), np.array([1]), esc, 4)
    assert row["escalation_at_T"] == 1.0


def test_report_prints_table5_at_t_first(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    from dcem.cli import main

    db = str(tmp_path) + "/t5.duckdb"  # type: ignore[operator]
    assert main(["run", "synthetic", "--scenarios", "S3b", "--seeds", "1", "--n-train", "1000",
                 "--n-eval", "20", "--quiet", "--db", db]) == 0
    capsys.readouterr()
    assert main(["report", "--db", db]) == 0
    out = capsys.readouterr().out
    at_t = out.index("AT round T")
    assert "risk_at_T" in out[at_t:] and "escalation_at_T" in out[at_t:]
    assert out.index("BY round T") > at_t


# 3. CONTINUE = one exchange round -------------------------------------------------

def test_an_exchange_round_moves_an_agent_toward_its_peer() -> None:
    agents = RuleAgents(scenario("S3b"), _features(x1=1, x3=1, x4=1), np.random.default_rng(0))
    own = agents.probabilities()[0, 0]
    for peer_label in range(3):
        moved = agents.exchange_scores(np.array([[0, peer_label]]))[0, 0]
        p = np.exp(moved - moved.max())
        p /= p.sum()
        assert p[peer_label] > own[peer_label]
    with pytest.raises(InputError, match="round 2"):
        RuleAgents(scenario("S3b"), _features(x1=1), np.random.default_rng(0)).report(2)


def test_continue_rounds_are_free_discussion_rounds() -> None:
    """A mediator that only ever says CONTINUE gives exactly free discussion's reports:
    D-CEM and free discussion differ only by the mediator's actions."""
    cases = generate(300, np.random.default_rng(3))
    never_stop = MediatorConfig(eps_safe=0.0, eps_low=1e-9, s_asym=1e9, escalation=False, t_max=10,
                                prior="uniform")
    scen = scenario("S3a")
    mediated = deliberate(_panel(), RuleAgents(scen, cases.features, np.random.default_rng(9)), never_stop)
    free = free_discussion(_panel(), RuleAgents(scen, cases.features, np.random.default_rng(9)), never_stop,
                           rounds=10)
    assert set(mediated.trajectory.action[:, :-1].ravel().tolist()) == {0}  # CONTINUE only
    np.testing.assert_array_equal(mediated.reports, free.reports)
    agree = (free.reports[:, :, 0] == free.reports[:, :, 1]).mean(axis=0)
    assert agree[-3:].mean() > agree[0] + 0.05


# 4. steering stays in the held rules, weights never negative ----------------------

@pytest.mark.parametrize("scen_name", ["S1", "S2", "S3a", "S3b"])
def test_steering_never_leaves_the_held_rules_or_goes_negative(scen_name: str) -> None:
    assert SteeringConfig().held_only and SteeringConfig().w_lo == 0.0
    scen = scenario(scen_name)
    cases = generate(200, np.random.default_rng(1))
    agents = RuleAgents(scen, cases.features, np.random.default_rng(2), compliance_rng=np.random.default_rng(3))
    rng = np.random.default_rng(4)
    for t in range(1, 30):
        agents.report(t)
        m = 200
        target = rng.integers(0, 2, m)
        current = rng.integers(0, 3, m)
        alternative = (current + rng.integers(1, 3, m)) % 3
        agents.steer(SteerRequest(t, np.arange(m), target, current, alternative, rng.random((m, 2))))
    assert agents.adopted > 0
    assert (agents.weights >= 0).all()
    assert (agents.weights[:, ~scen.held] == 0).all()  # never a rule the agent does not hold
    assert not np.allclose(agents.weights, scen.weights)


def test_the_box_keeps_a_recommendation_non_negative() -> None:
    w = np.array([[0.1, 2.0, 0.0]])
    ref = np.array([[3.0, 0.0, 3.0]])
    rec = recommend(w, ref, update_mask(np.array([0, 1, 2]), np.array([1]), np.array([0])), SteeringConfig(eta=50))
    assert rec.min() >= 0.0 and rec[0, 2] == 0.0


# 5. kappa on the rule-score scale ---------------------------------------------------

@pytest.mark.parametrize("sharpness", [1.0, 3.0])
def test_peer_influence_is_kappa_on_the_rule_score_scale(sharpness: float) -> None:
    """The peer's label gains log-odds sharpness * kappa over the others: kappa weighs
    like a rule weight, whatever the temperature."""
    agents = RuleAgents(scenario("S3b"), _features(x1=1, x3=1, x4=1), np.random.default_rng(0),
                        sharpness=sharpness, kappa=0.7)
    own = agents.scores()[0, 0]
    moved = agents.exchange_scores(np.array([[2, 1]]))[0, 0]  # agent 0's peer said k1
    shift = moved - own
    assert shift[1] - shift[0] == pytest.approx(sharpness * 0.7)
    assert shift[2] - shift[0] == pytest.approx(0.0)


# 6. eq. (19) ---------------------------------------------------------------------

def test_blend_compliance_applies_eq_19() -> None:
    scen = scenario("S2")
    cases = generate(50, np.random.default_rng(1))

    def steered(compliance: str, xi: float) -> tuple[np.ndarray, np.ndarray]:
        agents = RuleAgents(scen, cases.features, np.random.default_rng(2), compliance_rng=np.random.default_rng(3),
                            xi=xi, compliance=compliance)
        before = agents.weights.copy()
        n = len(cases)
        agents.steer(SteerRequest(1, np.arange(n), np.ones(n, dtype=int), np.full(n, 2), np.zeros(n, dtype=int),
                                  np.tile([0.1, 0.9], (n, 1))))
        return before, agents.weights

    before, full = steered("adopt", 1.0)
    _, half = steered("blend", 0.5)
    cfg = SteeringConfig()
    np.testing.assert_allclose(half[:, 1], blend_compliance(before[:, 1], full[:, 1], 0.5, cfg))
    np.testing.assert_allclose(half[:, 1], 0.5 * before[:, 1] + 0.5 * full[:, 1])
    _, blend_one = steered("blend", 1.0)
    np.testing.assert_allclose(blend_one, full)  # xi = 1: both models adopt in full
    cell = run_cell("S2", 0, n_train=2000, n_eval=30, ablation=False, compliance="blend", xi=0.5)
    assert cell.info["compliance"] == "blend"
    with pytest.raises(InputError, match="compliance"):
        RuleAgents(scen, cases.features, np.random.default_rng(0), compliance="sometimes")
    with pytest.raises(ConfigError, match="compliance"):
        SyntheticSpec(compliance="sometimes")
