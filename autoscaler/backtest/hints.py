"""What a replay's messages tell the user to do, in the words of the command that runs it.

``autoscaler backtest`` has an option for each way out (``--initial-replicas``, ``--selector``,
``--replicas-query``); ``autoscaler convert --compare`` replays converted targets with the same code but has
none of them (its ``--selector`` picks the HPAs to convert), so its messages say what to do there instead.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BACKTEST_HINTS", "OptionHints"]


@dataclass(frozen=True, slots=True)
class OptionHints:
    initial_replicas: str  # the workload's replicas at --from are unknown
    selector: str  # a query uses <<selector>>, and the scale's selector is unknown
    replicas_query: str  # no kube-state-metrics series gives the workload's replicas


BACKTEST_HINTS = OptionHints(
    initial_replicas="pass --initial-replicas",
    selector="pass --selector (e.g. --selector app=web)",
    replicas_query="see --replicas-query",
)
