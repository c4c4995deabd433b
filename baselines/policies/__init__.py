"""Policies behind one small protocol (:mod:`baselines.policies.base`): scripted, transformers, vLLM."""

from baselines.policies.base import Choice, Generation, Policy, Request, VectorInputs, request_for

__all__ = ["Choice", "Generation", "Policy", "Request", "VectorInputs", "request_for"]
