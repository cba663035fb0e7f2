"""Logging: JSON lines, per-task context, the standard library's loggers, levels, and secret redaction."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from typing import Any

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.service.settings import LoggingSettings
from autoscaler.service.telemetry.logs import REDACTED, configure_logging, redact_text

JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


pytestmark = pytest.mark.usefixtures("restore_logging")


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def json_logging(level: str = "info") -> io.StringIO:
    stream = io.StringIO()
    configure_logging(LoggingSettings(format="json", level=level), stream=stream)
    return stream


def test_json_lines_carry_timestamp_level_logger_event_and_context() -> None:
    stream = json_logging()
    log = structlog.stdlib.get_logger("autoscaler.service.sync.reconciler")
    log.info(
        "decision",
        namespace="shop",
        name="web",
        current_replicas=2,
        proposal=5,
        replicas=4,
        scaled=True,
        reason="cpu above target",
        limited_by="ScaleUpLimit",
    )
    [line] = lines(stream)
    assert list(line)[:4] == ["timestamp", "level", "logger", "event"]
    assert line["timestamp"].endswith("Z") and "T" in line["timestamp"]
    assert (line["level"], line["logger"], line["event"]) == ("info", "autoscaler.service.sync.reconciler", "decision")
    assert line["replicas"] == 4 and line["scaled"] is True and line["limited_by"] == "ScaleUpLimit"


async def test_context_bound_in_a_task_reaches_structlog_and_stdlib_lines_from_that_task_only() -> None:
    stream = json_logging()

    async def reconcile(name: str) -> None:
        with structlog.contextvars.bound_contextvars(namespace="shop", name=name):
            await asyncio.sleep(0)
            structlog.stdlib.get_logger("autoscaler.reconciler").info("sync started")
            logging.getLogger("kubernetes_asyncio.client.rest").warning("retrying %s", "GET /scale")

    await asyncio.gather(reconcile("web"), reconcile("api"))
    logging.getLogger("asyncio").error("outside any target")
    records = lines(stream)
    assert sorted((r["logger"], r.get("name")) for r in records[:4]) == [
        ("autoscaler.reconciler", "api"),
        ("autoscaler.reconciler", "web"),
        ("kubernetes_asyncio.client.rest", "api"),
        ("kubernetes_asyncio.client.rest", "web"),
    ]
    assert {r["event"] for r in records if r["logger"].startswith("kubernetes")} == {"retrying GET /scale"}
    assert records[-1]["logger"] == "asyncio" and "name" not in records[-1] and records[-1]["level"] == "error"


def test_levels_filter_both_kinds_of_loggers() -> None:
    stream = json_logging("warning")
    structlog.stdlib.get_logger("autoscaler").info("hidden")
    logging.getLogger("aiohttp.access").info("hidden too")
    structlog.stdlib.get_logger("autoscaler").warning("shown")
    assert [r["event"] for r in lines(stream)] == ["shown"]
    stream = json_logging("debug")
    logging.getLogger("kubernetes_asyncio").debug("response body: %s", "{}")
    assert [r["event"] for r in lines(stream)] == ["response body: {}"]


def test_configuring_again_replaces_the_handler() -> None:
    json_logging()
    stream = json_logging()
    structlog.stdlib.get_logger("x").info("once")
    assert len(lines(stream)) == 1
    ours = [h for h in logging.getLogger().handlers if getattr(h, "_autoscaler_handler", False)]
    assert len(ours) == 1


def test_console_format_and_auto_detection() -> None:
    console = io.StringIO()
    configure_logging(LoggingSettings(format="console"), stream=console)
    structlog.stdlib.get_logger("x").info("hello", namespace="shop")
    assert "hello" in console.getvalue() and "namespace=shop" in console.getvalue()
    with pytest.raises(json.JSONDecodeError):
        json.loads(console.getvalue())

    tty = Tty()
    configure_logging(LoggingSettings(format="auto"), stream=tty)
    structlog.stdlib.get_logger("x").info("on a terminal")
    assert not tty.getvalue().startswith("{")

    pipe = io.StringIO()
    configure_logging(LoggingSettings(format="auto"), stream=pipe)
    structlog.stdlib.get_logger("x").info("in a pod")
    assert lines(pipe)[0]["event"] == "in a pod"


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_secrets_are_redacted_everywhere(fmt: str) -> None:
    stream = io.StringIO()
    configure_logging(LoggingSettings(format=fmt, level="info"), stream=stream)
    log = structlog.stdlib.get_logger("autoscaler.prometheus")
    log.info(
        "request",
        headers={"Authorization": "Bearer s3cr3t-header-token", "Accept": "application/json"},
        password="hunter2-password",
        bearer_token="s3cr3t-keyword-token",
        bearer_token_file="/var/run/secrets/token",
        url="https://admin:p4ssw0rd-in-url@prometheus:9090/",
    )
    log.warning("sent Authorization: Bearer s3cr3t-message-token to https://prometheus/api/v1/query")
    log.info("token in a list", items=["ok", f"jwt {JWT}"], config={"nested": {"client_secret": "s3cr3t-nested"}})
    logging.getLogger("kubernetes_asyncio.client.rest").info(
        "request headers: %s", {"authorization": "Bearer s3cr3t-stdlib-token"}
    )
    try:
        raise PermissionError("401 for GET /api?access_token=s3cr3t-in-exception")
    except PermissionError:
        log.exception("query failed")
    output = stream.getvalue()
    for secret in ("s3cr3t", "hunter2", "p4ssw0rd", JWT):
        assert secret not in output
    assert output.count(REDACTED) >= 8
    assert "/var/run/secrets/token" in output  # where a token lives is not a secret
    assert "application/json" in output and "query failed" in output and "PermissionError" in output


def test_redact_text_examples() -> None:
    assert redact_text("Authorization: Bearer abc.def-ghi") == "Authorization: Bearer [REDACTED]"
    assert redact_text("{'Authorization': 'Basic dXNlcjpwYXNz'}") == "{'Authorization': 'Basic [REDACTED]'}"
    assert redact_text("GET /q?token=abc123&x=1") == "GET /q?token=[REDACTED]&x=1"
    assert redact_text('{"password": "pw"}') == '{"password": "[REDACTED]"}'
    assert redact_text("http://u:pw@host:9090/x") == "http://u:[REDACTED]@host:9090/x"
    assert redact_text("the basic idea, bearer of news") == "the basic idea, bearer of news"
    assert redact_text("tokenFile=/etc/token reason=ScaleUpLimit") == "tokenFile=/etc/token reason=ScaleUpLimit"


@settings(max_examples=200, deadline=None)
@given(
    token=st.from_regex(r"[A-Za-z0-9._~+/-]{8,40}", fullmatch=True),
    before=st.sampled_from(["", "error: ", "headers={'Authorization': '", "Authorization:", "x "]),
    scheme=st.sampled_from(["Bearer", "bearer", "Basic"]),
    after=st.sampled_from(["", "'}", " then retried", ", status=401"]),
)
def test_a_credential_after_its_scheme_never_survives(token: str, before: str, scheme: str, after: str) -> None:
    text = f"{before}{scheme} {token}{after}"
    assert token not in redact_text(text)


_PIECES = [
    "Authorization",
    "authorization:",
    "Bearer ",
    "basic ",
    "Proxy-Authorization=",
    "password",
    "PASSWD",
    "client_secret",
    "access_token",
    "api-key",
    "apikey",
    "://",
    "u:pw@",
    "eyJ",
    "abcdefgh.",
    "ijklmnop.",
    "=",
    ": ",
    "'",
    '"',
    " ",
    "x",
    "9",
]


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(st.text(max_size=60), st.lists(st.sampled_from(_PIECES), max_size=12).map("".join)))
def test_the_quick_check_never_skips_a_redaction(text: str) -> None:
    from autoscaler.service.telemetry.logs import _TEXT_PATTERNS

    slow = text
    for pattern, replacement in _TEXT_PATTERNS:
        slow = pattern.sub(replacement, slow)
    assert redact_text(text) == slow
