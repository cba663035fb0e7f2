"""Label sharding's settings and names: ``--shard`` / ``sharding.shard``, ``sharding.labelKey``, the
targets' label selector, the shard's Lease, and a targets file read by a shard."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.cli import build_parser, main
from autoscaler.cli.run import flag_overrides, read_run_inputs
from autoscaler.kube.labels import parse_label_selector
from autoscaler.service.cluster.sharding import ShardingSettings
from autoscaler.service.settings import load_service_settings, parse_service_settings
from autoscaler.values.fields import SpecError

URL = {"prometheus": {"url": "http://p:9090"}}


def problems(document: dict[str, object]) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_service_settings({**URL, **document})
    return [str(e) for e in info.value.errors]


def test_unsharded_by_default_serving_the_targets_without_the_label() -> None:
    sharding = parse_service_settings(URL).serving.sharding
    assert sharding == ShardingSettings(None, "autoscaler.dev/shard")
    assert sharding.label_selector == "!autoscaler.dev/shard"
    assert sharding.lease_name("autoscaler") == "autoscaler"


def test_a_shard_selects_its_label_and_has_a_lease_of_its_own() -> None:
    sharding = parse_service_settings({**URL, "sharding": {"shard": "eu-1"}}).serving.sharding
    assert sharding.label_selector == "autoscaler.dev/shard=eu-1"
    assert sharding.lease_name("autoscaler") == "autoscaler-eu-1"
    custom = parse_service_settings(
        {**URL, "sharding": {"shard": "b", "labelKey": "example.com/team"}}
    ).serving.sharding
    assert custom.label_selector == "example.com/team=b"
    assert parse_service_settings({**URL, "sharding": {"labelKey": "team"}}).serving.sharding.label_selector == "!team"


@pytest.mark.parametrize(
    ("sharding", "labels", "served"),
    [
        (ShardingSettings(), {}, True),
        (ShardingSettings(), {"app": "web"}, True),
        (ShardingSettings(), {"autoscaler.dev/shard": "a"}, False),
        (ShardingSettings(), {"autoscaler.dev/shard": ""}, False),  # the label is there, empty or not
        (ShardingSettings("a"), {"autoscaler.dev/shard": "a"}, True),
        (ShardingSettings("a"), {"autoscaler.dev/shard": "b"}, False),
        (ShardingSettings("a"), {}, False),
        (ShardingSettings("a", "team"), {"team": "a", "autoscaler.dev/shard": "b"}, True),
    ],
)
def test_the_selector_is_what_the_api_server_applies(
    sharding: ShardingSettings, labels: dict[str, str], served: bool
) -> None:
    """``serves`` (for a file's targets) agrees with the label selector the API server is sent, read by an
    independent parser of Kubernetes selectors."""
    assert sharding.serves(labels) is served
    assert parse_label_selector(sharding.label_selector).matches(labels) is served


def test_bad_shard_names_and_keys_are_refused_with_their_path() -> None:
    assert problems({"sharding": {"shard": "-a"}}) == [
        "sharding.shard: the shard name is a label value: must be at most 63 characters: letters, digits, '-', "
        "'_' and '.', beginning and ending with a letter or digit (e.g. 'MyValue', 'my_value', '12345')"
    ]
    assert problems({"sharding": {"shard": "a" * 64}})[0].startswith("sharding.shard: the shard name is a label value")
    assert problems({"sharding": {"shard": ""}}) == ["sharding.shard: Required value"]
    assert problems({"sharding": {"shard": 1}}) == ['sharding.shard: must be a string, not a number (quote it: "1")']
    assert problems({"sharding": {"labelKey": "a/b/c"}})[0].startswith("sharding.labelKey: not a valid label key:")
    assert problems({"sharding": {"labelKey": "Example.com/shard"}})[0].startswith(
        "sharding.labelKey: not a valid label key: the prefix"
    )
    assert problems({"sharding": {"shards": "a"}}) == ['sharding.shards: unknown field (did you mean "shard"?)']


def test_a_shard_name_must_also_fit_in_its_lease_name() -> None:
    """A label value may hold capitals and underscores; a Lease's name may not: said at start-up, not as a
    422 from the API server at every election attempt. Without leader election there is no Lease."""
    assert problems({"sharding": {"shard": "EU_1"}}) == [
        'sharding.shard: the shard\'s Lease would be named "autoscaler-EU_1", which must be at most 253 '
        "characters: lowercase letters, digits, '-' and '.', beginning and ending with a letter or digit"
    ]
    alone = {**URL, "sharding": {"shard": "EU_1"}, "leaderElection": {"enabled": False}}
    assert parse_service_settings(alone).serving.sharding.shard == "EU_1"


def test_flag_environment_and_file(tmp_path: Path) -> None:
    args = build_parser().parse_args(["run", "--shard", "a"])
    assert flag_overrides(args) == {("sharding", "shard"): "a"}
    path = tmp_path / "s.yaml"
    path.write_text("prometheus: {url: http://p:9090}\nsharding: {shard: file, labelKey: example.com/shard}\n")
    assert load_service_settings(str(path), environ={}).serving.sharding == ShardingSettings(
        "file", "example.com/shard"
    )
    # The environment's value is the shard's name as written: "1" stays text (YAML would read a number).
    from_env = load_service_settings(str(path), environ={"AUTOSCALER_SHARD": "1"})
    assert from_env.serving.sharding.shard == "1"
    flagged = load_service_settings(str(path), environ={"AUTOSCALER_SHARD": "1"}, flags=flag_overrides(args))
    assert flagged.serving.sharding == ShardingSettings("a", "example.com/shard")


def test_a_bad_shard_flag_exits_2_naming_the_setting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--prometheus-url", "http://p:9090", "--shard", "a b"]) == 2
    assert "sharding.shard: the shard name is a label value" in capsys.readouterr().err


SPEC = """\
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: External
    external: {metric: {name: q}, query: sum(q), target: {type: AverageValue, averageValue: "10"}}
"""
TARGETS = "---\n".join(
    f"apiVersion: autoscaler.dev/v1alpha1\nkind: ScalingTarget\nmetadata: {metadata}\n{SPEC}"
    for metadata in (
        "{name: plain}",
        "{name: in-a, labels: {autoscaler.dev/shard: a}}",
        "{name: in-b, labels: {autoscaler.dev/shard: b, app: web}}",
    )
)


@pytest.mark.parametrize(("shard", "names"), [(None, ["plain"]), ("a", ["in-a"]), ("b", ["in-b"]), ("c", [])])
def test_a_targets_file_obeys_the_shards_selector(tmp_path: Path, shard: str | None, names: list[str]) -> None:
    """Every shard may read the same file: each runs the targets its selector picks, as from the CRD."""
    path = tmp_path / "targets.yaml"
    path.write_text(TARGETS)
    flags: dict[tuple[str, ...], object] = {("prometheus", "url"): "http://p:9090", ("targets",): str(path)}
    if shard is not None:
        flags[("sharding", "shard")] = shard
    _, targets = read_run_inputs(None, flags)
    assert [t.name for t in targets or []] == names


def test_a_targets_files_labels_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "targets.yaml"
    path.write_text(TARGETS.replace("labels: {autoscaler.dev/shard: a}", "labels: {autoscaler.dev/shard: 1}"))
    assert main(["run", "--prometheus-url", "http://p:9090", "--targets", str(path)]) == 2
    assert f"{path}[1].metadata.labels.autoscaler.dev/shard: must be a string, not integer" in capsys.readouterr().err
