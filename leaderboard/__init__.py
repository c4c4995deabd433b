"""Evaluation protocols, result files with provenance, validation by replay, and ranking (grows with the issues that
add them). Built on ``marl_llm_envs`` transcripts and ``replay``."""
