"""HVPA: one decision for the replica count and the per-pod resources (HVPA-EP-0001, made exact).

Entry point: :func:`autoscaler.core.hvpa.decision.decide_hvpa`. The spec section is read by
:mod:`autoscaler.core.hvpa.spec_parse`; docs/hvpa.md describes the algorithm and every resolution.
"""
