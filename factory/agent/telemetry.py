"""Optional OpenTelemetry spans for an agent run, to a loopback collector only (SPEC A-10).

* :func:`parse_endpoint` accepts only ``http://`` to a *literal* loopback IP
  (``127.0.0.0/8`` or ``[::1]``); names (even ``localhost``), other hosts, ``https``,
  userinfo, queries, fragments, scope ids and non-ASCII text are refused at parse time
  with :class:`EndpointRefused` (a :class:`~factory.errors.UsageError`, exit 2), before
  any effect. An empty path becomes ``/v1/traces`` (the OTLP/HTTP traces path).
* :class:`TelemetryObserver` implements :class:`~factory.agent.observer.RunObserver` with
  the OpenTelemetry SDK and the OTLP/HTTP protobuf exporter: one ``factory.agent.cycle``
  span and one child span per phase (``factory.agent.worker``, ``…initial_review``,
  ``…repair``, ``…final_review``), each with a status (:func:`phase_status`,
  :func:`cycle_status`: OK when it did its job, a rejection included; ERROR with the error
  code as description when it failed or was interrupted). :attr:`TelemetryObserver.
  trace_id` is recorded in the receipt so a trace and its receipt can be joined. Span
  attributes pass an allow-list enforced in code
  (:func:`allowed_attributes`): ``factory.phase``, ``factory.outcome``,
  ``factory.duration_ms``, ``factory.exit_code``. The resource carries only
  ``service.name``; ``OTEL_RESOURCE_ATTRIBUTES`` and the other resource detectors are not
  consulted.

Export runs on the SDK's ``BatchSpanProcessor`` thread, never on the run's path. The HTTP
session ignores proxy settings and ``.netrc`` (``trust_env = False``), refuses any URL but
the parsed endpoint, drops headers that come from ``OTEL_EXPORTER_OTLP_*HEADERS``, and
follows no redirect. Export failures are swallowed (the SDK's own log lines are silenced
too); :meth:`TelemetryObserver.close` waits at most ``close_timeout_ms`` (default 500 ms)
for the last batch, so a dead or refusing endpoint cannot hold the exit for long.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, get_args
from urllib.parse import urlsplit

from factory.agent.observer import Outcome, Phase, Stage
from factory.errors import UsageError

if TYPE_CHECKING:
    import requests
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span

TRACES_PATH: Final = "/v1/traces"
SERVICE_NAME: Final = "factory-agent"
SCOPE_NAME: Final = "factory.agent"
SPAN_PREFIX: Final = "factory.agent."

ATTR_PHASE: Final = "factory.phase"
ATTR_OUTCOME: Final = "factory.outcome"
ATTR_DURATION_MS: Final = "factory.duration_ms"
ATTR_EXIT_CODE: Final = "factory.exit_code"
ALLOWED_ATTRIBUTE_KEYS: Final = frozenset(
    {ATTR_PHASE, ATTR_OUTCOME, ATTR_DURATION_MS, ATTR_EXIT_CODE}
)

_PHASES: frozenset[str] = frozenset(get_args(Phase))
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_SENT_HEADERS = frozenset({"content-type", "content-encoding", "user-agent", "content-length"})


class EndpointRefused(UsageError):
    """``--otel-endpoint`` is not ``http://`` to a literal loopback IP (exit 2)."""


ENDPOINT_REFUSED = EndpointRefused.define(
    "otel-endpoint-refused",
    "give http:// to a literal loopback IP, e.g. http://127.0.0.1:4318 or http://[::1]:4318",
    default=True,
)


def _refusal(reason: str) -> str:
    # The URL itself is never echoed: it may carry userinfo or other secrets.
    return f"--otel-endpoint refused ({reason})"


def parse_endpoint(url: str) -> str:
    """Validate an OTLP/HTTP endpoint and return it normalised (SPEC A-10).

    Returns ``http://<ip>[:<port>]<path>`` with the IP in canonical form (IPv6 in brackets)
    and ``/v1/traces`` when no path was given.

    Raises:
        EndpointRefused: (code ``otel-endpoint-refused``, exit 2) for anything but ``http``
            to a literal IPv4 in ``127.0.0.0/8`` or the IPv6 ``::1``; for names including
            ``localhost``; userinfo; a query or fragment (even empty); a scope id; a bad or
            zero port; whitespace, backslashes, control or non-ASCII characters.
    """
    if not isinstance(url, str) or not url:
        raise ENDPOINT_REFUSED(_refusal("empty"))
    if not url.isascii() or any(c.isspace() or ord(c) < 0x20 or c == "\x7f" for c in url):
        raise ENDPOINT_REFUSED(_refusal("non-ASCII, whitespace or control characters"))
    if "\\" in url:
        raise ENDPOINT_REFUSED(_refusal("backslash"))
    if "?" in url:
        raise ENDPOINT_REFUSED(_refusal("query"))
    if "#" in url:
        raise ENDPOINT_REFUSED(_refusal("fragment"))
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ENDPOINT_REFUSED(_refusal("malformed")) from None
    if parts.scheme != "http" or url[:7].lower() != "http://":
        raise ENDPOINT_REFUSED(_refusal("scheme must be http"))
    if "@" in parts.netloc:
        raise ENDPOINT_REFUSED(_refusal("userinfo"))
    host = parts.hostname
    if not host:
        raise ENDPOINT_REFUSED(_refusal("no host"))
    if "%" in parts.netloc:
        raise ENDPOINT_REFUSED(_refusal("scope id"))
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise ENDPOINT_REFUSED(_refusal("host is a name, not a literal loopback IP")) from None
    if not ip.is_loopback:
        raise ENDPOINT_REFUSED(_refusal("host is not loopback"))
    if ip.version == 4 and "[" in parts.netloc:
        raise ENDPOINT_REFUSED(_refusal("IPv4 in brackets"))
    try:
        port = parts.port
    except ValueError:
        raise ENDPOINT_REFUSED(_refusal("bad port")) from None
    if port == 0:
        raise ENDPOINT_REFUSED(_refusal("port 0"))
    rendered = f"[{ip.compressed}]" if ip.version == 6 else ip.compressed
    netloc = rendered if port is None else f"{rendered}:{port}"
    path = parts.path if parts.path not in ("", "/") else TRACES_PATH
    return f"http://{netloc}{path}"


def allowed_attributes(attributes: Mapping[str, object]) -> dict[str, str | int]:
    """Keep only allow-listed span attributes with values of the expected shape (pure).

    ``factory.phase`` must be a phase name; ``factory.outcome`` a short identifier token
    (else ``"unknown"``); ``factory.duration_ms`` and ``factory.exit_code`` integers
    (durations clamped at 0). Every other key is dropped.
    """
    out: dict[str, str | int] = {}
    for key, value in attributes.items():
        if key not in ALLOWED_ATTRIBUTE_KEYS:
            continue
        if key == ATTR_PHASE:
            if isinstance(value, str) and value in _PHASES:
                out[key] = value
        elif key == ATTR_OUTCOME:
            ok = isinstance(value, str) and _TOKEN.fullmatch(value) is not None
            out[key] = value if ok and isinstance(value, str) else "unknown"
        elif isinstance(value, int) and not isinstance(value, bool):
            out[key] = max(0, value) if key == ATTR_DURATION_MS else value
    return out


#: Phase outcomes that mean the phase did its job: a verdict of either kind is a result.
_PHASE_DONE: Final = frozenset({"ok", "APPROVE", "REQUEST_CHANGES"})
#: Run outcomes whose cycle span is OK: a rejection is a verdict, not an error.
_RUN_DONE: Final = frozenset({"completed", "rejected"})
StatusName = Literal["OK", "ERROR", "UNSET"]


def phase_status(outcome: str) -> tuple[StatusName, str | None]:
    """A phase span's status (pure): OK for ``ok`` or a verdict, UNSET for a span that was
    superseded, else ERROR with the failure code (an identifier token, else ``unknown``)
    as its description, per the OpenTelemetry convention that only errors carry one."""
    if outcome in _PHASE_DONE:
        return "OK", None
    if outcome == "superseded":
        return "UNSET", None
    return "ERROR", _token(outcome)


def cycle_status(outcome: str, error_code: str | None) -> tuple[StatusName, str | None]:
    """The cycle span's status (pure): OK when the run completed or was rejected (a verdict
    is not an error: the outcome attribute says which); ERROR when it failed or was
    interrupted, described by the typed error's code (else the outcome)."""
    if outcome in _RUN_DONE:
        return "OK", None
    return "ERROR", _token(error_code or outcome)


def _token(text: str) -> str:
    return text if _TOKEN.fullmatch(text) else "unknown"


def loopback_session(endpoint: str) -> requests.Session:
    """A ``requests.Session`` for one endpoint: env proxies, ``.netrc`` and env headers ignored.

    ``trust_env = False`` makes requests skip ``HTTP(S)_PROXY``/``ALL_PROXY``/``NO_PROXY``,
    ``.netrc`` and the CA-bundle variables. Any URL but ``endpoint`` is refused, headers
    other than content type/encoding/length and user agent are dropped (the exporter would
    add ``OTEL_EXPORTER_OTLP_*HEADERS`` values), and redirects are not followed.
    """
    import requests  # deferred: only a run with --otel-endpoint pays for it

    class LoopbackSession(requests.Session):
        def request(  # type: ignore[override]
            self, method: str, url: str, *args: Any, **kwargs: Any
        ) -> requests.Response:
            if url != endpoint:
                raise requests.exceptions.InvalidURL("telemetry may only reach its endpoint")
            headers = kwargs.get("headers") or {}
            kwargs["headers"] = {k: v for k, v in headers.items() if k.lower() in _SENT_HEADERS}
            kwargs["allow_redirects"] = False
            kwargs["proxies"] = {}
            return super().request(method, url, *args, **kwargs)

    session = LoopbackSession()
    session.trust_env = False
    session.proxies.clear()
    return session


def _silence_sdk_logging() -> None:
    # Export failures are swallowed; the SDK would otherwise print them to stderr.
    log = logging.getLogger("opentelemetry")
    if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
        log.addHandler(logging.NullHandler())
    log.propagate = False


class TelemetryObserver:
    """Spans per phase and per cycle to a loopback OTLP/HTTP collector (SPEC A-10).

    Args:
        endpoint: the ``--otel-endpoint`` URL; parsed again with :func:`parse_endpoint`.
        export_timeout_s: total time one batch export may take, retries included (s). It
            runs on the processor's thread, never on the run's path. The default 5 s: with
            0.5 s a real backend (Arize Phoenix on a busy machine,
            ``scripts/check_otel_backend``) answered the first batch too late and the
            worker's span was lost.
        close_timeout_ms: the longest :meth:`close` waits for the last batch (ms).
        exporter: a span exporter to use instead of OTLP/HTTP (tests).

    Raises:
        EndpointRefused: the endpoint is not a literal loopback ``http://`` URL. Any other
            failure while setting up the SDK or exporter disables telemetry quietly.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        export_timeout_s: float = 5.0,
        close_timeout_ms: int = 500,
        exporter: SpanExporter | None = None,
    ) -> None:
        self.endpoint = parse_endpoint(endpoint)  # the only error this constructor raises
        self._close_timeout_ms = max(0, close_timeout_ms)
        self._open: dict[str, Any] = {}
        self._closed = False
        self._started_ns = time.monotonic_ns()
        try:
            self._start(export_timeout_s, exporter)
        except Exception:  # a broken SDK or exporter disables telemetry, never the run
            self._closed = True

    def _start(self, export_timeout_s: float, exporter: SpanExporter | None) -> None:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON

        _silence_sdk_logging()
        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http import Compression
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(
                endpoint=self.endpoint,
                timeout=export_timeout_s,
                compression=Compression.NoCompression,
                session=loopback_session(self.endpoint),
            )
        self._exporter = exporter
        # A private provider (never the global one); no atexit hook that could wait 30 s.
        self._provider = TracerProvider(
            resource=Resource({"service.name": SERVICE_NAME}),
            sampler=ALWAYS_ON,
            shutdown_on_exit=False,
        )
        self._processor = BatchSpanProcessor(exporter, schedule_delay_millis=1000)
        self._provider.add_span_processor(self._processor)
        self._tracer = self._provider.get_tracer(SCOPE_NAME)
        self._cycle = self._tracer.start_span(SPAN_PREFIX + "cycle")
        self._cycle_context = trace.set_span_in_context(self._cycle)

    # -- RunObserver ---------------------------------------------------------------------

    def stage(
        self,
        stage: Stage,
        *,
        remaining_invocations: int,
        verdict: str | None = None,
        outcome: Outcome | None = None,
    ) -> None:
        return None  # stages are progress; telemetry records phases and the cycle

    def phase_started(self, phase: Phase) -> None:
        if self._closed or phase not in _PHASES:
            return
        with contextlib.suppress(Exception):
            self._end_open(phase, "superseded", None)
            span = self._tracer.start_span(SPAN_PREFIX + phase, context=self._cycle_context)
            span.set_attributes(allowed_attributes({ATTR_PHASE: phase}))
            self._open[phase] = span

    def phase_ended(self, phase: Phase, *, outcome: str, duration_ms: int) -> None:
        if self._closed or phase not in _PHASES:
            return
        with contextlib.suppress(Exception):
            if phase not in self._open:
                start_ns = time.time_ns() - max(0, int(duration_ms)) * 1_000_000
                self._open[phase] = self._tracer.start_span(
                    SPAN_PREFIX + phase, context=self._cycle_context, start_time=start_ns
                )
            self._end_open(phase, outcome, duration_ms)

    @property
    def trace_id(self) -> str | None:
        """The run's trace id (32 lowercase hex digits), or None when telemetry is off."""
        try:
            return f"{self._cycle.get_span_context().trace_id:032x}"
        except Exception:  # the SDK never started: no trace to join
            return None

    def close(self, *, outcome: Outcome, exit_code: int, error_code: str | None = None) -> None:
        """End open spans and the cycle span with their statuses; flush for at most
        ``close_timeout_ms``. A phase still open when a run fails ends as its failure."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            status, description = cycle_status(outcome, error_code)
            for phase in list(self._open):
                self._end_open(phase, description or outcome, None)
            elapsed_ms = (time.monotonic_ns() - self._started_ns) // 1_000_000
            self._cycle.set_attributes(
                allowed_attributes(
                    {ATTR_OUTCOME: outcome, ATTR_EXIT_CODE: exit_code, ATTR_DURATION_MS: elapsed_ms}
                )
            )
            _set_status(self._cycle, status, description)
            self._cycle.end()
        with contextlib.suppress(Exception):
            self._flush_bounded()

    # -- internals -----------------------------------------------------------------------

    def _flush_bounded(self) -> None:
        # BatchSpanProcessor.shutdown() exports what is queued but may wait up to 30 s on a
        # dead endpoint; run it on a daemon thread, wait at most close_timeout_ms, then shut
        # the exporter, which aborts its retry back-off and closes its session.
        closer = threading.Thread(
            target=self._shutdown_quietly, name="factory-otel-close", daemon=True
        )
        closer.start()
        closer.join(self._close_timeout_ms / 1000)
        if closer.is_alive():
            with contextlib.suppress(Exception):
                self._exporter.shutdown()

    def _shutdown_quietly(self) -> None:
        with contextlib.suppress(Exception):  # a thread's exception would print a traceback
            self._processor.shutdown()  # type: ignore[no-untyped-call]

    def _end_open(self, phase: str, outcome: str, duration_ms: int | None) -> None:
        span = self._open.pop(phase, None)
        if span is None:
            return
        attrs: dict[str, object] = {ATTR_PHASE: phase, ATTR_OUTCOME: outcome}
        if duration_ms is not None:
            attrs[ATTR_DURATION_MS] = duration_ms
        span.set_attributes(allowed_attributes(attrs))
        _set_status(span, *phase_status(outcome))
        span.end()


def _set_status(span: Span, status: StatusName, description: str | None) -> None:
    from opentelemetry.trace import Status, StatusCode

    if status != "UNSET":
        span.set_status(Status(StatusCode[status], description))
