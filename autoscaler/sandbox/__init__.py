"""Real servers on loopback for tests, benchmarks and demos (never used by the service itself)."""

from autoscaler.sandbox.exporter import MetricsExporter
from autoscaler.sandbox.prometheus import PrometheusSandbox, SandboxError, ScrapeTarget, find_binary

__all__ = ["MetricsExporter", "PrometheusSandbox", "SandboxError", "ScrapeTarget", "find_binary"]
