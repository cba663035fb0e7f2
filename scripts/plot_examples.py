"""Make the example plots of docs/backtest.md (needs the plot extra and the prometheus binary).

    python scripts/plot_examples.py            # writes docs/images/*.png and prints the reports

1. ``autoscaler simulate config/scenarios/quickstart.yaml --plot docs/images/simulate-quickstart.png``.
2. The day of synthetic history of ``autoscaler backtest --demo-day`` (``autoscaler_sandbox/backtest_demo.py``),
   loaded with promtool into a private Prometheus; then ``autoscaler backtest current.yaml --compare
   proposed.yaml --plot docs/images/backtest-example.png``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autoscaler.cli import main  # noqa: E402
from autoscaler_sandbox import PrometheusSandbox  # noqa: E402
from autoscaler_sandbox.backtest_demo import CURRENT, END, PROPOSED, START, STEP, history  # noqa: E402

IMAGES = ROOT / "docs" / "images"


def main_() -> int:
    IMAGES.mkdir(parents=True, exist_ok=True)
    quickstart = ROOT / "config" / "scenarios" / "quickstart.yaml"
    main(["simulate", str(quickstart.relative_to(ROOT)), "--plot", str(IMAGES / "simulate-quickstart.png")])
    for name, document in (("current.yaml", CURRENT), ("proposed.yaml", PROPOSED)):
        (IMAGES / name).write_text(yaml.safe_dump(document, sort_keys=False))
    # Backfilled data has no staleness markers: a short lookback makes a removed pod vanish at once,
    # as a scraped series does when its stale marker is written.
    prom = PrometheusSandbox(extra_args=["--query.lookback-delta=25s"])
    try:
        prom.backfill(history(str(IMAGES / "current.yaml")))
        prom.start()
        return main(
            [
                "backtest",
                str(IMAGES / "current.yaml"),
                "--compare",
                str(IMAGES / "proposed.yaml"),
                "--prometheus",
                prom.url,
                "--from",
                str(int(START)),
                "--to",
                str(int(END)),
                "--step",
                f"{STEP}s",
                "--plot",
                str(IMAGES / "backtest-example.png"),
            ]
        )
    finally:
        prom.close()


if __name__ == "__main__":
    sys.exit(main_())
