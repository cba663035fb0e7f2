"""Events on targets, against the API emulator: a repeat within ten minutes is the same Event with a
growing ``count``; each object passes client-go's spam filter (25 in a burst, then one per 5 minutes),
so a target failing every sync does not write to the API server every sync; and the memory of both
holds more objects than a 10,000-target service has (client-go's 4,096 would not)."""

from __future__ import annotations

import asyncio

from kubernetes_asyncio.client import ApiClient

from autoscaler.kube.api import KubeApi
from autoscaler.kube.events import MAX_TRACKED, SPAM_BURST, SPAM_REFILL_SECONDS, EventRecorder, InvolvedObject
from kube_emulator import KubeEmulator


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def target(name: str) -> InvolvedObject:
    return InvolvedObject("autoscaler.dev/v1alpha1", "ScalingTarget", "default", name, uid=f"uid-{name}")


async def test_a_repeat_is_one_event_with_a_count(emulator: KubeEmulator, api: ApiClient) -> None:
    clock = Clock()
    recorder = EventRecorder(KubeApi(api), instance="test", clock=clock)
    for _ in range(3):
        await recorder.record(target("web"), "Warning", "FailedGetResourceMetric", "Prometheus did not answer")
        clock.now += 15
    await recorder.record(target("web"), "Normal", "SuccessfulRescale", "New size: 4")
    events = {e["reason"]: e for e in emulator.list("events", "default")}
    assert events["FailedGetResourceMetric"]["count"] == 3
    assert events["SuccessfulRescale"]["count"] == 1
    assert emulator.requests.count("create", "events") == 2 and emulator.requests.count("patch", "events") == 2


async def test_the_spam_filter_holds_back_a_target_failing_every_sync(emulator: KubeEmulator, api: ApiClient) -> None:
    clock = Clock()
    dropped: list[None] = []
    recorder = EventRecorder(KubeApi(api), clock=clock, on_dropped=lambda: dropped.append(None))
    for _ in range(40):  # ten minutes of 15 s syncs
        await recorder.record(target("web"), "Warning", "FailedGetResourceMetric", "Prometheus did not answer")
        clock.now += 15
    # the first 25 go through, and one more: 585 s from the first to the last refilled 1.95 tokens
    assert recorder.posted == SPAM_BURST + 1 and recorder.dropped == 40 - SPAM_BURST - 1 == len(dropped)
    assert emulator.requests.count(None, "events") == SPAM_BURST + 1
    [event] = emulator.list("events", "default")
    assert event["count"] == SPAM_BURST + 1
    # another target has its own bucket
    await recorder.record(target("api"), "Warning", "FailedGetResourceMetric", "Prometheus did not answer")
    assert recorder.posted == SPAM_BURST + 2
    # after a quiet while the bucket is full again
    clock.now += SPAM_BURST * SPAM_REFILL_SECONDS
    for _ in range(SPAM_BURST):
        await recorder.record(target("web"), "Warning", "FailedGetResourceMetric", "Prometheus did not answer")
    assert recorder.dropped == 40 - SPAM_BURST - 1


async def test_more_targets_than_client_gos_cache_still_aggregate(emulator: KubeEmulator, api: ApiClient) -> None:
    """Past 4,096 objects client-go's caches forget the oldest: at 10,000 targets, a repeat would be a
    new Event (and a full bucket again) for every target."""
    recorder = EventRecorder(KubeApi(api), clock=Clock())
    await recorder.record(target("first"), "Warning", "FailedGetResourceMetric", "down")
    others = [target(f"t{i:04d}") for i in range(4100)]
    for start in range(0, len(others), 100):
        await asyncio.gather(
            *(recorder.record(o, "Warning", "FailedGetResourceMetric", "down") for o in others[start : start + 100])
        )
    await recorder.record(target("first"), "Warning", "FailedGetResourceMetric", "down")
    first = [e for e in emulator.list("events", "default") if e["involvedObject"]["name"] == "first"]
    assert [e["count"] for e in first] == [2]
    assert MAX_TRACKED > 2 * 10_000
