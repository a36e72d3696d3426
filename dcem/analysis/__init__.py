"""Reading results: Appendix E metrics, the paper's report tables, what-if re-scoring of
stored runs, run comparison, the case walkthrough and the ``explain`` command's trace."""
