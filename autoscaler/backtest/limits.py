"""How much history a backtest asks Prometheus for at a time (the command line's default and bound too).

Kept apart, and free of imports, so that the command line's help can name them without loading the replay.
"""

# Prometheus refuses a range query with more points than this per series.
MAX_POINTS_PER_QUERY = 11_000
# Syncs per chunk of history: 4 h at the default 15 s. Memory grows with this times the series read.
DEFAULT_CHUNK_POINTS = 960
