"""Reading results: Appendix E metrics, the paper's report tables and generated REPRODUCTION
blocks, what-if re-scoring of stored runs, reading a run's settings and calibration, and
the ``explain`` command's trace."""
