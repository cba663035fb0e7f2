"""Fault injection: rules that match requests and make them fail, slow down, or cut watches.

Rules are checked in the order they were added. Delays accumulate; the first matching
error-type rule answers the request *instead of* the handler, so an injected error never
changes state (the request is not executed at all). ``Delay(after=True)`` is the opposite
case on purpose: the request is executed and its answer held back, like a write that landed
but whose response timed out.

Matching is on the parsed request (see :mod:`kube_emulator.requestinfo`) with
shell-style patterns: ``verb="patch"``, ``resource="deployments/scale"``,
``resource="deployments*"``, ``namespace="team-*"``, or a regular expression on the path.
"""

from __future__ import annotations

import fnmatch
import random
import re
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from kube_emulator import errors
from kube_emulator.requestinfo import RequestInfo


@dataclass(frozen=True, slots=True)
class Respond:
    """Answer with an error ``Status`` (optionally with ``Retry-After``) without running the request."""

    code: int
    reason: str | None = None
    message: str | None = None
    retry_after: int | None = None


@dataclass(frozen=True, slots=True)
class Conflict:
    """Answer 409 Conflict with the real "object has been modified" message."""


@dataclass(frozen=True, slots=True)
class Delay:
    """Hold the request for ``seconds`` before running it, or (``after=True``) before answering."""

    seconds: float
    after: bool = False


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Close the connection without answering (a reset / crashed server, from the client's side)."""


@dataclass(frozen=True, slots=True)
class DropWatch:
    """End a watch stream after ``after_events`` events or ``after_seconds``; ``abrupt`` cuts the
    TCP connection mid-stream instead of ending the response cleanly."""

    after_events: int | None = None
    after_seconds: float | None = None
    abrupt: bool = False


@dataclass(frozen=True, slots=True)
class ExpireWatch:
    """Answer a watch with a single ERROR event carrying 410 Expired, as for a compacted resourceVersion."""


FaultAction = Respond | Conflict | Delay | Disconnect | DropWatch | ExpireWatch


@dataclass(eq=False)
class FaultRule:
    action: FaultAction
    verb: str | None = None
    resource: str | None = None
    group: str | None = None
    namespace: str | None = None
    name: str | None = None
    path: str | None = None
    """A regular expression searched in the request path (matches non-resource requests too)."""
    times: int | None = None
    """Fire at most this many times (``None``: for ever)."""
    skip: int = 0
    """Let this many matching requests through first."""
    probability: float = 1.0
    matched: int = 0
    fired: int = 0
    _path_pattern: re.Pattern[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.path is not None:
            self._path_pattern = re.compile(self.path)

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.fired >= self.times

    def matches(self, info: RequestInfo) -> bool:
        if self._path_pattern is not None and not self._path_pattern.search(info.path):
            return False
        checks = (
            (self.verb, info.verb),
            (self.resource, info.resource_label),
            (self.group, info.group),
            (self.namespace, info.namespace or ""),
            (self.name, info.name or ""),
        )
        return all(pattern is None or fnmatch.fnmatchcase(value, pattern) for pattern, value in checks)


@dataclass
class FaultPlan:
    """What the matching rules decided for one request."""

    delay_before: float = 0.0
    delay_after: float = 0.0
    answer: Respond | Conflict | Disconnect | ExpireWatch | None = None
    drop_watch: DropWatch | None = None
    rules: list[FaultRule] = field(default_factory=list)

    @property
    def description(self) -> str | None:
        if not self.rules:
            return None
        return ", ".join(type(rule.action).__name__ for rule in self.rules)


class Match(TypedDict, total=False):
    """The matching fields and limits of :class:`FaultRule`, for the convenience constructors."""

    verb: str
    resource: str
    group: str
    namespace: str
    name: str
    path: str
    times: int
    skip: int
    probability: float


class FaultInjector:
    def __init__(self, seed: int | None = None) -> None:
        self.rules: list[FaultRule] = []
        self._random = random.Random(seed)

    def add(self, rule: FaultRule) -> FaultRule:
        self.rules.append(rule)
        return rule

    def remove(self, rule: FaultRule) -> None:
        if rule in self.rules:
            self.rules.remove(rule)

    def clear(self) -> None:
        self.rules.clear()

    # Convenience constructors; ``match`` takes FaultRule's matching fields and limits.

    def error(
        self,
        code: int = 500,
        *,
        message: str | None = None,
        reason: str | None = None,
        **match: Unpack[Match],
    ) -> FaultRule:
        return self.add(FaultRule(Respond(code, reason, message), **match))

    def throttle(self, retry_after: int = 1, **match: Unpack[Match]) -> FaultRule:
        """429 TooManyRequests with ``Retry-After`` (API priority and fairness sends 1)."""
        return self.add(FaultRule(Respond(429, retry_after=retry_after), **match))

    def conflicts(self, count: int, **match: Unpack[Match]) -> FaultRule:
        """A storm of ``count`` consecutive 409 Conflicts (``count`` is the rule's ``times``)."""
        match["times"] = count
        return self.add(FaultRule(Conflict(), **match))

    def delay(self, seconds: float, *, after: bool = False, **match: Unpack[Match]) -> FaultRule:
        return self.add(FaultRule(Delay(seconds, after), **match))

    def disconnect(self, **match: Unpack[Match]) -> FaultRule:
        return self.add(FaultRule(Disconnect(), **match))

    def drop_watches(
        self,
        *,
        after_events: int | None = None,
        after_seconds: float | None = None,
        abrupt: bool = False,
        **match: Unpack[Match],
    ) -> FaultRule:
        if after_events is None and after_seconds is None:
            after_events = 0
        match.setdefault("verb", "watch")
        return self.add(FaultRule(DropWatch(after_events, after_seconds, abrupt), **match))

    def expire_watches(self, **match: Unpack[Match]) -> FaultRule:
        match.setdefault("verb", "watch")
        return self.add(FaultRule(ExpireWatch(), **match))

    def plan(self, info: RequestInfo) -> FaultPlan:
        plan = FaultPlan()
        for rule in list(self.rules):
            if rule.exhausted or not rule.matches(info):
                continue
            action = rule.action
            if isinstance(action, (DropWatch, ExpireWatch)) and info.verb != "watch":
                continue
            rule.matched += 1
            if rule.matched <= rule.skip:
                continue
            if rule.probability < 1.0 and self._random.random() >= rule.probability:
                continue
            rule.fired += 1
            plan.rules.append(rule)
            if isinstance(action, Delay):
                if action.after:
                    plan.delay_after += action.seconds
                else:
                    plan.delay_before += action.seconds
            elif isinstance(action, DropWatch):
                plan.drop_watch = plan.drop_watch or action
            else:
                plan.answer = action
                break
        return plan


def answer_error(action: Respond | Conflict, info: RequestInfo) -> errors.ApiError:
    """The ``ApiError`` an error-type action answers with."""
    if isinstance(action, Conflict):
        return errors.conflict(info.resource, info.group, info.name or "")
    if action.code == 429:
        problem = errors.too_many_requests(action.retry_after if action.retry_after is not None else 1)
        if action.message:
            problem.message = action.message
        return problem
    problem = errors.generic(action.code, action.message, action.reason)
    if action.retry_after is not None:
        problem.headers["Retry-After"] = str(action.retry_after)
        problem.details = {**(problem.details or {}), "retryAfterSeconds": action.retry_after}
    return problem
