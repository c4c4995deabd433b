"""Policies behind one small protocol (:mod:`baselines.policies.base`): scripted, transformers, vLLM."""

from baselines.policies.base import Generation, Policy, Request

__all__ = ["Generation", "Policy", "Request"]
