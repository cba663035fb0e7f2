"""The watch caches' relists: client-go's backoff between them, and when a cache relists too often; both pure
(time passed in). A cache that relists too often, as the service's readiness reports it, and the relist
settings: tests/service/test_cache_relists.py."""

from __future__ import annotations

from autoscaler.kube.relists import RelistBackoff, Relists


def test_the_backoff_doubles_to_its_cap_jittered_up_to_twice_each_step() -> None:
    lowest = RelistBackoff(rand=lambda: 0.0)
    assert [lowest.next_wait(float(t)) for t in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    highest = RelistBackoff(rand=lambda: 0.999)
    waits = [highest.next_wait(float(t)) for t in range(8)]
    assert all(
        1.99 * low <= high < 2 * low
        for low, high in zip([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0], waits, strict=True)
    )


def test_the_backoff_starts_over_after_two_quiet_minutes() -> None:
    backoff = RelistBackoff(rand=lambda: 0.0)
    assert [backoff.next_wait(t) for t in (0.0, 1.0, 2.0)] == [0.8, 1.6, 3.2]
    assert not backoff.quiet(122.0)
    assert backoff.next_wait(110.0) == 6.4  # 108 s after the last wait began: not quiet yet
    assert backoff.quiet(230.1)
    assert backoff.next_wait(230.1) == 0.8


def test_more_than_five_relists_in_a_minute_is_too_often_until_a_minute_of_following() -> None:
    relists = Relists()
    moments = [0.0, 1.0, 3.0, 7.0, 15.0]
    assert not any(relists.record(t, "expired", t) for t in moments)
    assert not relists.too_often(20.0, following=False)
    assert relists.record(31.0, "expired", 31.0)  # the sixth within 60 s
    assert relists.too_often(31.0, following=True)
    assert (relists.streak, relists.streak_began) == (6, 0.0)
    # At the backoff's cap relists come every 30–60 s, fewer than the limit: still too often while the
    # cache does not follow the server between them.
    assert not relists.record(80.0, "expired", 80.0)
    assert not relists.record(135.0, "expired", 135.0)
    assert relists.streak == 8
    assert relists.too_often(190.0, following=False)
    assert relists.too_often(150.0, following=True)  # following, but not for a minute yet
    assert not relists.too_often(196.0, following=True)
    assert relists.counts == {"expired": 8} and relists.total == 8
    assert relists.settle(196.0) and relists.too_often_since is None
    # A relist after a calm minute starts no streak
    assert not relists.record(200.0, "error", 199.0)
    assert not relists.too_often(200.0, following=False)


def test_a_relist_after_a_minute_of_following_ends_the_state() -> None:
    relists = Relists(limit=2, window=10.0)
    for moment in (0.0, 1.0, 2.0):
        relists.record(moment, "error", moment)
    assert relists.too_often_since == 2.0
    # the cache followed the server from its relist at 2 s until 14 s, then failed and relisted at 15 s
    assert not relists.record(15.0, "error", followed_until=14.0)
    assert relists.too_often_since is None
