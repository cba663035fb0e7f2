"""``autoscaler convert --compare`` target by target: one without recorded history is reported by name while
the others still compare; a metric the replay never read is said so (and why), not blamed on values or
tolerance; and every option a message of convert or backtest suggests exists."""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.backtest.replay import BacktestOptions
from autoscaler.cli import build_parser, main
from autoscaler.convert.compare import Comparison, compare, render
from autoscaler.convert.model import Conversion, Origin
from autoscaler.core.settings import ControllerSettings
from autoscaler.prometheus import PrometheusClient, PrometheusSettings
from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd
from tests.convert import compare_data

FROM = str(int(hd.T0))
TO = str(int(hd.T0) + (hd.SYNCS - 1) * hd.STEP)
ROOT = Path(__file__).resolve().parents[2]
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
BACKTEST_COMMAND = re.compile(r"autoscaler backtest[^`]*")


def options_of(command: str) -> set[str]:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a.choices, dict) and command in a.choices)
    assert isinstance(subparsers.choices, dict)
    return set(subparsers.choices[command]._option_string_actions)


def suggested(text: str, own: set[str], backtest: set[str]) -> set[str]:
    """The options ``text`` names that do not exist: those in an `autoscaler backtest …` command it quotes are
    backtest's, the others ``own``."""
    missing = {o for command in BACKTEST_COMMAND.findall(text) for o in OPTION.findall(command)} - backtest
    rest = BACKTEST_COMMAND.sub("", text)
    return missing | (set(OPTION.findall(rest)) - own)


def string_constants(path: Path) -> list[str]:
    """The strings of a module, its docstrings left out (they explain; messages are what users read)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_every_option_a_message_suggests_exists() -> None:
    convert, backtest = options_of("convert"), options_of("backtest")
    package = ROOT / "autoscaler"
    for paths, own in (
        ([*(package / "convert").glob("*.py"), *(package / "cli").glob("convert*.py")], convert),
        ([*(package / "backtest").glob("*.py"), package / "cli" / "backtest.py"], backtest),
    ):
        for path in paths:
            for text in string_constants(path):
                assert not suggested(text, own, backtest), (path.name, text)


def inputs(tmp_path: Path, *hpas: dict[str, Any]) -> list[str]:
    (tmp_path / "hpas.yaml").write_text(yaml.safe_dump_all(hpas))
    (tmp_path / "adapter.yaml").write_text(yaml.safe_dump(compare_data.ADAPTER_CONFIG))
    return [str(tmp_path / "hpas.yaml"), "--adapter-config", str(tmp_path / "adapter.yaml")]


def ghost() -> dict[str, Any]:
    """An HPA of a Deployment the history holds nothing of."""
    hpa = compare_data.hpa("ghost")
    hpa["spec"]["scaleTargetRef"]["name"] = "ghost"
    return hpa


@pytest.mark.prometheus
@pytest.mark.parametrize("output", ["text", "json"])
def test_a_target_without_history_is_named_and_the_others_still_compare(
    series_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    argv = [*inputs(tmp_path, ghost(), compare_data.hpa("web")), "--compare", "--prometheus", series_prometheus.url]
    code = main(["convert", *argv, "--from", FROM, "--to", TO, "--output", output, "--output-dir", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 1, captured  # flagged: one target could not be compared; not bad input
    why = "cannot tell how many replicas the workload had at --from"
    assert f"HorizontalPodAutoscaler shop/ghost: not compared: {why}" in captured.err
    if output == "json":
        ghost_report, web = json.loads(captured.out)["targets"]
        assert ghost_report["source"]["name"] == "ghost" and why in ghost_report["notCompared"]
        assert ghost_report["flagged"] is True
        assert web["equalShare"] == 1.0 and web["flagged"] is False
    else:
        assert f"HorizontalPodAutoscaler shop/ghost → ScalingTarget shop/ghost\n  NOT COMPARED: {why}" in captured.out
        assert "HorizontalPodAutoscaler shop/web → ScalingTarget shop/web" in captured.out
        assert "agreement: 100.0 % of 40 syncs equal" in captured.out
    # what it suggests exists: a --from of convert's, or backtest's --initial-replicas in a backtest command
    assert "`autoscaler backtest TARGET.yaml --initial-replicas N`" in captured.err
    assert not suggested(captured.out + captured.err, options_of("convert"), options_of("backtest"))


UNREAD: dict[str, Any] = {
    "type": "External",
    "external": {
        "metric": {"name": "queue"},
        "target": {"type": "AverageValue", "averageValue": "10"},
        "query": "sum(queue_depth_nowhere{<<scope>>})",
    },
}


async def compared(prometheus: PrometheusSandbox, metrics: list[dict[str, Any]]) -> Any:
    spec = copy.deepcopy(hd.WEB_SPEC)
    spec["metrics"] = metrics
    conversion = Conversion(Origin("ScaledObject", "shop", "web", "so.yaml"), {"spec": spec}, old_hpa="web")
    settings = PrometheusSettings(url=prometheus.url)
    options = BacktestOptions(start=hd.T0, end=hd.T0 + (hd.SYNCS - 1) * hd.STEP, step=hd.STEP)
    async with PrometheusClient(settings) as client:
        return await compare(client, settings, ControllerSettings(), conversion, options)


@pytest.mark.prometheus
async def test_a_metric_that_failed_at_every_sync_is_never_read_not_values(
    series_prometheus: PrometheusSandbox,
) -> None:
    comparison = await compared(series_prometheus, [UNREAD])
    assert set(comparison.unread) == {"queue"}
    assert "it failed at every sync of the replay, first with:" in comparison.unread["queue"]
    assert "the query returned no series" in comparison.unread["queue"]
    assert set(comparison.agreement.causes) == {"metric"}  # not values, not tolerance
    assert "FLAGGED: metric queue was never read in the replay" in render(comparison, 0.9)


@pytest.mark.prometheus
async def test_an_empty_metric_read_as_zero_is_never_read_even_where_the_replay_agrees(
    series_prometheus: PrometheusSandbox,
) -> None:
    """ignoreNullValues reads the empty answers as 0: no failure, yet the metric never said anything. Beside the
    metrics the history followed, the replay agrees throughout; it is flagged all the same, naming why."""
    unread = copy.deepcopy(UNREAD)
    unread["external"] |= {"ignoreNullValues": True, "backend": "tenant-b"}
    comparison = await compared(series_prometheus, [*copy.deepcopy(hd.WEB_SPEC)["metrics"], unread])
    assert comparison.agreement.share == 1.0 and comparison.flagged(0.9)
    why = comparison.unread["queue"]
    assert "its query returned no series at any sync of the range, and ignoreNullValues read each" in why
    assert "it names backend 'tenant-b'; the replay read every metric from" in why
    only_web = await compared(series_prometheus, copy.deepcopy(hd.WEB_SPEC)["metrics"])
    assert not only_web.unread and not only_web.flagged(0.9)


@pytest.mark.prometheus
async def test_a_target_with_its_own_sync_period_replays_at_it_unless_step_is_given(
    series_prometheus: PrometheusSandbox,
) -> None:
    from autoscaler.cli.convert_compare import _compare_all
    from autoscaler.service.settings import ServiceSettings

    spec = {**copy.deepcopy(hd.WEB_SPEC), "syncPeriodSeconds": 30}
    conversion = Conversion(Origin("ScaledObject", "shop", "web", "so.yaml"), {"spec": spec}, old_hpa="web")
    settings = ServiceSettings(prometheus=PrometheusSettings(url=series_prometheus.url))
    options = BacktestOptions(start=hd.T0, end=hd.T0 + (hd.SYNCS - 1) * hd.STEP, step=hd.STEP)
    (own,) = await _compare_all(settings, [conversion], options, own_step=True)
    (given,) = await _compare_all(settings, [conversion], options, own_step=False)
    assert isinstance(own, Comparison) and isinstance(given, Comparison)
    assert own.result.runs[0].report.step == 30 and own.agreement.compared == 20
    assert given.result.runs[0].report.step == hd.STEP
