"""``autoscaler backtest``: replay a target spec against the Prometheus history of its workload.

See ``docs/backtest.md``. The replay runs the service's own engine (``decide`` and
``apply_scale_result``, state carried in ``TargetState``) on observations rebuilt from range
queries, one chunk of history at a time.
"""
