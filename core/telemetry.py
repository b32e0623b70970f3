"""KIP-714 client telemetry, the client's side (Java's ClientTelemetryReporter state machine), sans-I/O. Pure Python:
it runs once per push interval, never per record.

States: SUBSCRIPTION_NEEDED -> (GetTelemetrySubscriptions sent) SUBSCRIPTION_IN_PROGRESS -> PUSH_NEEDED ->
(PushTelemetry sent) PUSH_IN_PROGRESS -> PUSH_NEEDED ... ; DISABLED for good (the broker does not speak it, or
answered an error that asking again cannot fix). Decisions, with time passed in:

- `request(now_ms)`: what to send now, `("subscriptions", body)` or `("push", body-without-metrics)` (the caller adds
  the encoded metrics), or None; `delay_ms(now_ms)`: how long until something is due.
- The first ask goes at once, with a zero client instance id: the answer assigns one, kept for the client's life.
- An answer with no requested metrics: nothing is pushed, the subscriptions are asked again after push_interval_ms.
- Pushes go every push_interval_ms; `wants(name)` says which metric names the subscriptions' prefixes match ("" is
  all of them).
- `terminate()` as the client closes: with a subscription that wants metrics, one last push goes at once with
  terminating=true; whatever its answer, telemetry then ends (TERMINATED).
- Answers, as Java's: a push's UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE -> ask the subscriptions again
  now; TELEMETRY_TOO_LARGE or THROTTLING_QUOTA_EXCEEDED -> the next push as planned; a lost connection or timeout ->
  ask again after the interval; INVALID_REQUEST, INVALID_RECORD, UNSUPPORTED_VERSION (or any other) -> disabled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from cykafka.protocol.error_codes import ErrorCode, error_info

SUBSCRIPTION_NEEDED = "subscription_needed"
SUBSCRIPTION_IN_PROGRESS = "subscription_in_progress"
PUSH_NEEDED = "push_needed"
PUSH_IN_PROGRESS = "push_in_progress"
DISABLED = "disabled"
TERMINATING_PUSH_NEEDED = "terminating_push_needed"
TERMINATING_PUSH_IN_PROGRESS = "terminating_push_in_progress"
TERMINATED = "terminated"
DEFAULT_PUSH_INTERVAL_MS = 5 * 60 * 1000  # Java's, until a broker says otherwise
COMPRESSION_NONE = 0
_ASK_AGAIN_NOW = frozenset({ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE})
_PUSH_LATER = frozenset({ErrorCode.TELEMETRY_TOO_LARGE, ErrorCode.THROTTLING_QUOTA_EXCEEDED})


class ClientTelemetry:
    """One client's telemetry subscription and push schedule (see the module's docstring)."""

    def __init__(self, retry_backoff_ms: int) -> None:
        self.retry_backoff_ms = retry_backoff_ms
        self.state = SUBSCRIPTION_NEEDED
        self.client_instance_id = UUID(int=0)
        self.subscription_id = 0
        self.push_interval_ms = DEFAULT_PUSH_INTERVAL_MS
        self.telemetry_max_bytes = 0
        self.delta_temporality = False
        self.requested_metrics: tuple[str, ...] = ()
        self.accepted_compression_types: tuple[int, ...] = ()
        self.due_ms = 0  # the next request goes at or after this
        self.pushes = 0  # pushes answered without an error

    @property
    def enabled(self) -> bool:
        return self.state not in (DISABLED, TERMINATED)

    @property
    def terminating(self) -> bool:
        return self.state in (TERMINATING_PUSH_NEEDED, TERMINATING_PUSH_IN_PROGRESS)

    def terminate(self) -> bool:
        """The client is closing: True when a last push (terminating=true) is to go, else telemetry just ends."""
        if self.state == PUSH_NEEDED:
            self.state, self.due_ms = TERMINATING_PUSH_NEEDED, 0
            return True
        if self.state != DISABLED:
            self.state = TERMINATED
        return False

    def disable(self) -> None:
        self.state = DISABLED

    def delay_ms(self, now_ms: int) -> int | None:
        """Ms until request() has something (0: now); None while an answer is awaited or telemetry is disabled."""
        if self.state in (SUBSCRIPTION_NEEDED, PUSH_NEEDED, TERMINATING_PUSH_NEEDED):
            return max(0, self.due_ms - now_ms)
        return None

    def request(self, now_ms: int) -> tuple[str, dict[str, Any]] | None:
        """What to send now, or None; the state moves to in progress (answer with on_subscriptions / on_push /
        on_failure)."""
        if self.state == SUBSCRIPTION_NEEDED and now_ms >= self.due_ms:
            self.state = SUBSCRIPTION_IN_PROGRESS
            return "subscriptions", {"client_instance_id": self.client_instance_id}
        if self.state in (PUSH_NEEDED, TERMINATING_PUSH_NEEDED) and now_ms >= self.due_ms:
            terminating = self.state == TERMINATING_PUSH_NEEDED
            self.state = TERMINATING_PUSH_IN_PROGRESS if terminating else PUSH_IN_PROGRESS
            return "push", {"client_instance_id": self.client_instance_id, "subscription_id": self.subscription_id,
                            "terminating": terminating, "compression_type": COMPRESSION_NONE}
        return None

    def wants(self, name: str) -> bool:
        """Whether the subscriptions ask for the metric `name` (a KIP-714 name, org.apache.kafka....)."""
        return any(name.startswith(prefix) for prefix in self.requested_metrics)

    def on_subscriptions(self, answer: Mapping[str, Any], now_ms: int) -> None:
        if not self.enabled:
            return  # answered after the client closed
        code = answer["error_code"]
        if code != ErrorCode.NONE:
            self._failed(code, now_ms)
            return
        self.client_instance_id = answer["client_instance_id"]
        self.subscription_id = answer["subscription_id"]
        self.push_interval_ms = answer["push_interval_ms"] if answer["push_interval_ms"] > 0 else \
            DEFAULT_PUSH_INTERVAL_MS
        self.telemetry_max_bytes = answer["telemetry_max_bytes"]
        self.delta_temporality = answer["delta_temporality"]
        self.requested_metrics = tuple(answer["requested_metrics"])
        self.accepted_compression_types = tuple(answer["accepted_compression_types"])
        # nothing requested: ask again after the interval (a subscription may be added meanwhile)
        self.state = PUSH_NEEDED if self.requested_metrics else SUBSCRIPTION_NEEDED
        self.due_ms = now_ms + self.push_interval_ms

    def on_push(self, answer: Mapping[str, Any], now_ms: int) -> None:
        if not self.enabled:
            return
        code = answer["error_code"]
        if self.state == TERMINATING_PUSH_IN_PROGRESS:
            self.state = TERMINATED
            self.pushes += code == ErrorCode.NONE
        elif code == ErrorCode.NONE:
            self.pushes += 1
            self.state, self.due_ms = PUSH_NEEDED, now_ms + self.push_interval_ms
        elif code in _ASK_AGAIN_NOW:
            self.state, self.due_ms = SUBSCRIPTION_NEEDED, now_ms
        elif code in _PUSH_LATER:
            self.state, self.due_ms = PUSH_NEEDED, now_ms + self.push_interval_ms
        else:
            self._failed(code, now_ms)

    def on_failure(self, now_ms: int) -> None:
        """The request was not answered (a lost connection, a timeout, not sent): ask the subscriptions again after
        the interval (at least retry.backoff.ms)."""
        if self.state == TERMINATING_PUSH_IN_PROGRESS:
            self.state = TERMINATED
        elif self.state not in (DISABLED, TERMINATED):
            self.state = SUBSCRIPTION_NEEDED
            self.due_ms = now_ms + max(self.retry_backoff_ms, self.push_interval_ms
                                       if self.push_interval_ms != DEFAULT_PUSH_INTERVAL_MS else 0)

    def _failed(self, code: int, now_ms: int) -> None:
        if error_info(code).retriable:
            self.state, self.due_ms = SUBSCRIPTION_NEEDED, now_ms + self.retry_backoff_ms
        else:
            self.state = DISABLED
