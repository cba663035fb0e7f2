"""``autoscaler backtest``: replay a target spec against the Prometheus history of its workload.

See ``docs/backtest.md``. The replay runs the service's own sync (:func:`autoscaler.core.sync.sync`,
state carried in ``SyncState``) on observations rebuilt from range queries, one chunk of history at a
time.
"""
