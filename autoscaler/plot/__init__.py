"""Plots of per-step decisions (``autoscaler simulate --plot`` and ``autoscaler backtest --plot``).

The plotting libraries are an optional extra (``pip install 'autoscaler[plot]'``): matplotlib draws
PNG files, plotly writes self-contained interactive HTML. See ``docs/backtest.md``, "Plots".
"""
