"""Telemetry (SPEC A-10): loopback-only endpoints, one span per phase, allow-listed attributes,
proxy-free batched export whose failures change nothing and do not hold the exit."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest
import requests
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from factory.agent.observer import FanOut, Outcome, Phase, RunObserver
from factory.agent.telemetry import (
    ALLOWED_ATTRIBUTE_KEYS,
    EndpointRefused,
    TelemetryObserver,
    allowed_attributes,
    cycle_status,
    parse_endpoint,
    phase_status,
)
from factory.errors import ExitCode
from tests.support.otlp import http_receiver, refused_port, silent_listener

SENTINEL = "PROVIDER-OUTPUT-SENTINEL /home/u/secret task text"

# ---- endpoint parsing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/v1/traces", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.9.8.7:1/custom/path", "http://127.9.8.7:1/custom/path"),
        ("http://[::1]:4318", "http://[::1]:4318/v1/traces"),
        ("http://[0:0:0:0:0:0:0:1]:4318", "http://[::1]:4318/v1/traces"),
        ("HTTP://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1", "http://127.0.0.1/v1/traces"),
    ],
)
def test_literal_loopback_is_accepted(url: str, normal: str) -> None:
    assert parse_endpoint(url) == normal
    assert parse_endpoint(normal) == normal  # idempotent


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:4318",
        "http://LOCALHOST:4318",
        "http://localhost.:4318",
        "http://collector.internal:4318",
        "http://example.com/v1/traces",
        "http://10.0.0.1:4318",
        "http://0.0.0.0:4318",
        "http://[::]:4318",
        "http://[::ffff:127.0.0.1]:4318",
        "http://127.1:4318",
        "http://2130706433:4318",
        "http://0x7f.0.0.1:4318",
        "http://[127.0.0.1]:4318",
        "https://127.0.0.1:4318",
        "ftp://127.0.0.1:4318",
        "127.0.0.1:4318",
        "//127.0.0.1:4318",
        "http://user:hunter2@127.0.0.1:4318",
        "http://@127.0.0.1:4318",
        "http://127.0.0.1:4318/v1/traces?x=1",
        "http://127.0.0.1:4318/v1/traces?",
        "http://127.0.0.1:4318/v1/traces#frag",
        "http://127.0.0.1:4318#",
        "http://[::1%25lo]:4318",
        "http://127.0.0.1:0",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:port",
        "http://127.0.0.1 :4318",
        "http://127.0.0.1:4318/v1/tr aces",
        "http://127.0.0.1\\@evil.example:4318",
        "http://127.0.0.1:4318/\u00e9",
        "",
    ],
)
def test_everything_else_is_refused_with_exit_2(url: str) -> None:
    with pytest.raises(EndpointRefused) as info:
        parse_endpoint(url)
    assert info.value.code == "otel-endpoint-refused"
    assert info.value.exit_code == ExitCode.USAGE
    assert int(info.value.exit_code) == 2
    assert "hunter2" not in info.value.message
    assert "\n" not in info.value.message


def test_the_observer_refuses_a_bad_endpoint_before_any_effect() -> None:
    with pytest.raises(EndpointRefused):
        TelemetryObserver("http://localhost:4318")


# ---- attributes allow-list (pure) ------------------------------------------------------------


def test_allowed_attributes_drops_and_clamps() -> None:
    got = allowed_attributes(
        {
            "factory.phase": "repair",
            "factory.outcome": SENTINEL,
            "factory.duration_ms": -5,
            "factory.exit_code": 3,
            "factory.task": SENTINEL,
            "http.url": "http://x",
        }
    )
    assert got == {
        "factory.phase": "repair",
        "factory.outcome": "unknown",
        "factory.duration_ms": 0,
        "factory.exit_code": 3,
    }
    assert allowed_attributes({"factory.phase": "cooking"}) == {}
    assert allowed_attributes({"factory.duration_ms": True}) == {}


def test_allowed_attributes_negative_control_keeps_good_values() -> None:
    good = {
        "factory.phase": "final_review",
        "factory.outcome": "REQUEST_CHANGES",
        "factory.duration_ms": 1234,
        "factory.exit_code": 0,
    }
    assert allowed_attributes(good) == good
    assert allowed_attributes({"factory.outcome": "provider-timeout"}) == {
        "factory.outcome": "provider-timeout"
    }


# ---- a run against a real loopback receiver ---------------------------------------------------

REPAIR_PHASES: list[tuple[Phase, str]] = [
    ("worker", "ok"),
    ("initial_review", "REQUEST_CHANGES"),
    ("repair", "ok"),
    ("final_review", "APPROVE"),
]


def _drive(
    observer: RunObserver, phases: Sequence[tuple[Phase, str]], outcome: Outcome, code: int
) -> tuple[Outcome, int, float]:
    """Calls the observer the way the run does; returns the outcome and the slowest call (s)."""
    slowest = 0.0
    observer.stage("validating", remaining_invocations=4)
    for phase, result in phases:
        t0 = time.perf_counter()
        observer.phase_started(phase)
        observer.phase_ended(phase, outcome=result, duration_ms=42)
        slowest = max(slowest, time.perf_counter() - t0)
    observer.stage("terminal_outcome", remaining_invocations=0, outcome=outcome)
    return outcome, code, slowest


def test_receiver_gets_one_span_per_phase_with_only_allowed_attributes() -> None:
    with http_receiver() as (port, received):
        obs = TelemetryObserver(f"http://127.0.0.1:{port}")
        _drive(obs, REPAIR_PHASES, "completed", 0)
        obs.phase_started("worker")  # a phase with provider prose as its outcome
        obs.phase_ended("worker", outcome=SENTINEL, duration_ms=7)
        obs.close(outcome="completed", exit_code=0)
        spans = received.spans()
        raw = b"".join(body for _, _, _, body in received.requests)
        paths = {path for _, path, _, _ in received.requests}
    names = sorted(s["name"] for s in spans)
    assert names == sorted(
        [
            "factory.agent.cycle",
            "factory.agent.worker",
            "factory.agent.worker",
            "factory.agent.initial_review",
            "factory.agent.repair",
            "factory.agent.final_review",
        ]
    )
    assert paths == {"/v1/traces"}
    cycle = next(s for s in spans if s["name"] == "factory.agent.cycle")
    assert cycle["attributes"]["factory.outcome"] == "completed"
    assert cycle["attributes"]["factory.exit_code"] == 0
    for span in spans:
        assert set(span["attributes"]) <= ALLOWED_ATTRIBUTE_KEYS
        assert span["resource"] == {"service.name": "factory-agent"}
        assert span["scope"] == "factory.agent"
        assert span["trace_id"] == cycle["trace_id"]
        if span is not cycle:
            assert span["parent_span_id"] == cycle["span_id"]
            assert span["attributes"]["factory.phase"] == span["name"].rsplit(".", 1)[1]
            assert span["attributes"]["factory.duration_ms"] in (42, 7)
    verdicts = {
        s["attributes"]["factory.phase"]: s["attributes"]["factory.outcome"]
        for s in spans
        if s is not cycle and s["attributes"]["factory.duration_ms"] == 42
    }
    assert verdicts == dict(REPAIR_PHASES)
    assert b"SENTINEL" not in raw and b"secret" not in raw


def test_export_ignores_proxy_settings_and_env_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    with http_receiver() as (port, received), http_receiver() as (proxy_port, proxied):
        proxy = f"http://127.0.0.1:{proxy_port}"
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
            monkeypatch.setenv(name, proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20SECRET-TOKEN")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-leak=SECRET-TOKEN")
        monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "host.name=SECRET-HOST")
        obs = TelemetryObserver(f"http://127.0.0.1:{port}")
        _drive(obs, REPAIR_PHASES[:2], "completed", 0)
        obs.close(outcome="completed", exit_code=0)
        assert len(received.spans()) == 3
        assert proxied.requests == []
        for _, _, headers, _ in received.requests:
            assert "SECRET-TOKEN" not in repr(headers)
        assert all(s["resource"] == {"service.name": "factory-agent"} for s in received.spans())
        # Negative control: an ordinary requests session in the same environment does go
        # through the "proxy", so the assertion above can fail.
        requests.post(f"http://127.0.0.1:{port}/v1/traces", data=b"", timeout=5)
        assert len(proxied.requests) == 1


def test_a_refusing_endpoint_changes_nothing_and_does_not_hold_the_exit() -> None:
    port = refused_port()
    obs = TelemetryObserver(f"http://127.0.0.1:{port}")
    baseline = _drive(FanOut(), REPAIR_PHASES, "rejected", 3)[:2]
    outcome, code, slowest = _drive(FanOut(obs), REPAIR_PHASES, "rejected", 3)
    t0 = time.perf_counter()
    obs.close(outcome=outcome, exit_code=code)
    closing = time.perf_counter() - t0
    assert (outcome, code) == baseline == ("rejected", 3)
    assert slowest < 0.05  # export is off the hot path
    assert closing < 1.0, f"close took {closing:.3f}s"


def test_a_hung_collector_does_not_hold_the_exit() -> None:
    with silent_listener() as port:
        obs = TelemetryObserver(f"http://127.0.0.1:{port}")  # default: 500 ms
        _, _, slowest = _drive(obs, REPAIR_PHASES, "completed", 0)
        t0 = time.perf_counter()
        obs.close(outcome="completed", exit_code=0)
        closing = time.perf_counter() - t0
    assert slowest < 0.05
    assert closing < 1.0, f"close took {closing:.3f}s"


class ExplodingExporter(SpanExporter):
    """A span exporter whose every call raises."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise RuntimeError("exporter exploded")

    def shutdown(self) -> None:
        raise RuntimeError("exporter exploded")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        raise RuntimeError("exporter exploded")


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_an_exploding_exporter_changes_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    obs = TelemetryObserver("http://127.0.0.1:9", exporter=ExplodingExporter())
    outcome, code, _ = _drive(obs, REPAIR_PHASES, "failed", 4)
    obs.close(outcome=outcome, exit_code=code)
    obs.close(outcome=outcome, exit_code=code)  # twice: still quiet
    obs.phase_started("worker")  # after close: ignored
    assert (outcome, code) == ("failed", 4)
    assert "exploded" not in capfd.readouterr().err


def test_the_session_reaches_only_its_own_endpoint() -> None:
    from factory.agent.telemetry import loopback_session

    with http_receiver() as (port, received):
        endpoint = f"http://127.0.0.1:{port}/v1/traces"
        session = loopback_session(endpoint)
        with pytest.raises(requests.exceptions.InvalidURL):
            session.post(f"http://127.0.0.1:{port}/elsewhere", data=b"x", timeout=5)
        assert received.requests == []
        # Negative control: its own endpoint is reached.
        assert session.post(endpoint, data=b"x", timeout=5).status_code == 200
        assert [path for _, path, _, _ in received.requests] == ["/v1/traces"]


def test_a_broken_exporter_setup_disables_telemetry_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import opentelemetry.exporter.otlp.proto.http.trace_exporter as otlp

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("exporter cannot start")

    monkeypatch.setattr(otlp, "OTLPSpanExporter", broken)
    with http_receiver() as (port, received):
        obs = TelemetryObserver(f"http://127.0.0.1:{port}")  # does not raise
        outcome, code, _ = _drive(obs, REPAIR_PHASES, "completed", 0)
        obs.close(outcome=outcome, exit_code=code)
        assert received.requests == []
    assert (outcome, code) == ("completed", 0)
    # ...but a refused endpoint is still refused, broken SDK or not.
    with pytest.raises(EndpointRefused):
        TelemetryObserver("http://localhost:4318")


# -- span status (issue 9 §4): OK when the phase or run did its job, a rejection included;
#    ERROR with the error code as description when it failed or was interrupted.


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        ("ok", ("OK", None)),
        ("APPROVE", ("OK", None)),
        ("REQUEST_CHANGES", ("OK", None)),
        ("superseded", ("UNSET", None)),
        ("provider-timeout", ("ERROR", "provider-timeout")),
        ("interrupted", ("ERROR", "interrupted")),
        ("prose with secrets in it", ("ERROR", "unknown")),
    ],
)
def test_phase_status(outcome: str, status: tuple[str, str | None]) -> None:
    assert phase_status(outcome) == status


@pytest.mark.parametrize(
    ("outcome", "code", "status"),
    [
        ("completed", None, ("OK", None)),
        ("rejected", None, ("OK", None)),
        ("failed", "reviewer-mutation", ("ERROR", "reviewer-mutation")),
        ("interrupted", "interrupted", ("ERROR", "interrupted")),
        ("failed", None, ("ERROR", "failed")),
        ("failed", "not a token!", ("ERROR", "unknown")),
    ],
)
def test_cycle_status(outcome: str, code: str | None, status: tuple[str, str | None]) -> None:
    assert cycle_status(outcome, code) == status


def test_statuses_and_trace_id_reach_the_collector() -> None:
    with http_receiver() as (port, received):
        obs = TelemetryObserver(f"http://127.0.0.1:{port}")
        trace_id = obs.trace_id
        obs.phase_started("worker")
        obs.phase_ended("worker", outcome="ok", duration_ms=5)
        obs.phase_started("initial_review")
        obs.phase_ended("initial_review", outcome="REQUEST_CHANGES", duration_ms=5)
        obs.phase_started("repair")  # still running when the run fails
        obs.close(outcome="failed", exit_code=4, error_code="provider-timeout")
        spans = {s["name"].rsplit(".", 1)[1]: s for s in received.spans()}
    assert trace_id is not None and len(trace_id) == 32
    assert {s["trace_id"] for s in spans.values()} == {trace_id}
    got = {name: (s["status"], s["status_message"]) for name, s in spans.items()}
    assert got == {
        "cycle": ("ERROR", "provider-timeout"),
        "worker": ("OK", ""),
        "initial_review": ("OK", ""),
        "repair": ("ERROR", "provider-timeout"),
    }
    assert spans["repair"]["attributes"]["factory.outcome"] == "provider-timeout"


def test_a_disabled_observer_has_no_trace_id(monkeypatch: pytest.MonkeyPatch) -> None:
    import opentelemetry.sdk.trace as sdk_trace

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no SDK here")

    monkeypatch.setattr(sdk_trace, "TracerProvider", broken)
    assert TelemetryObserver("http://127.0.0.1:9").trace_id is None
