"""Tests for the sag package (local LLM agents and clinical datasets)."""
