"""D-CEM's core equations, batched over any leading axes, and the mediator's policy.

Equation index (numbers of the D-CEM seed) -> the function that implements it:

==========  =====================================================  ==========================================
eq.         what                                                   where
==========  =====================================================  ==========================================
2           confusion-induced posterior P_a(y) of a report          posterior.report_posteriors
                                                                   (probability reports: soft_report_posteriors)
3           Bayes risk R_L(d; P)                                   posterior.expected_risk, agent_risk
4           dangerous miss z_a                                     posterior.dangerous_miss
5           reliability rho_a and its floor                        pooling.reliability
6           pooling weights omega_a (with the omega_min clip)       pooling.pool_weights
7           log-linear pool Q                                      pooling.log_pool
8           Bayes decision d_1 (and runner-up d_2)                 decision.bayes_decision
9           risk margin Delta_L                                    decision.bayes_decision
10, 20      diagnostic-risk energy (two agents; N agents)          energy.energy_terms, symmetric_kl_sum
11          windowed energy descent g_hat                          energy.windowed_descent
12          stopping rule and the four actions                     policy.policy_step; replay_kernel (batched)
15          explanation discrepancy D_exp                          steering.explanation_discrepancy
16, 17      recommended explanation (projected gradient step)       steering.recommend, steering_objective
18          distinguishing rule set S(t)                           steering.distinguishing_rules
19          blended partial compliance                             steering.blend_compliance
21          stochastic partial compliance (App. F)                 steering.comply
B.3         steer mask over the rules of the two labels            steering.update_mask
==========  =====================================================  ==========================================

Per-round state of all of the above: :mod:`dcem.core.state`; a live deliberation with
agents in the loop: :mod:`dcem.core.deliberation`; re-scoring stored reports (label
table or probability vectors): :mod:`dcem.core.replay`.  Configuration:
:class:`dcem.core.config.MediatorConfig`; fixed inputs (C, L, prior):
:class:`dcem.core.panel.Panel`; the words (scenarios, methods, gates):
:mod:`dcem.core.vocabulary`; one method's outcome on a set of cases:
:class:`dcem.core.results.MethodRun`.  Multinomial-logit rule agents (App. B.7) live in
:mod:`dcem.synthetic.rule_agents`.
"""
