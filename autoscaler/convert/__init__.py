"""``autoscaler convert``: HorizontalPodAutoscalers fed by prometheus-adapter, and KEDA ScaledObjects,
converted into ScalingTargets, with a backtest beside the old autoscaler's recorded decisions
(``--compare``). See docs/migrating.md."""
