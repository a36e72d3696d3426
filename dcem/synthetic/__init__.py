"""D-CEM's synthetic rule-guided world: the generator (Table 2, App. D.1), the
multinomial-logit rule agents of the four scenarios (Table 3, App. B.7), and one
(scenario, seed) cell of the experiment with its baselines and the partial-compliance
ablation (App. F); :mod:`dcem.synthetic.spec` runs a grid of cells into the store."""
