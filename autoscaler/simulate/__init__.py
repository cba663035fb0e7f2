"""``autoscaler simulate``: replay a scenario file through the decision engine."""
