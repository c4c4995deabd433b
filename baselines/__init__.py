"""Baseline policies, the rollout engine, credit-assignment methods and trainers (grows with the issues that add
them). Nothing here is imported by ``marl_llm_envs``: data flows one way, envs -> rollouts -> credit -> trainer."""
