"""Predictive scale-up in the service: the forecasts kept fresh in the background (:mod:`.cache`) and their
gauges (:mod:`.gauges`). The decision's side is :mod:`autoscaler.core.prediction`."""
