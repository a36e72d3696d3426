"""Local LLM agents and clinical datasets for the D-CEM LLM-agent setting (App. D.2, G, H)."""
