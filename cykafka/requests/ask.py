"""`Asker.ask(request, route, deadline_ms)`: one request's answer, asked again after a retriable failure.

Owns: the one retry rule of the request layer. A call fails (the transport's error, or the answer's own error as the
caller's `check` reads it); the error table decides what that means: its kinds say what is stale (STALE_METADATA: a
metadata update; COORDINATOR_MOVED, or a lost connection to a coordinator: the coordinator is looked up again;
CONTROLLER_MOVED: a metadata update), its `retriable` flag whether to ask again, after retry.backoff.ms, until the
deadline; MEMBER_EPOCH_STALE (a KIP-848 member's commit or offset fetch carried an epoch a heartbeat has moved on
from) asks again a call built when it goes (`make`), so it carries the member's next epoch, as Java's
CommitRequestManager does. No second list of retriable codes anywhere: a code's row in protocol/error_codes.py is
the only place.

Waiting: with no network thread (`drive` given: Admin) the asker runs the client's network loop itself, at most
100 ms per turn so a close() from another thread is seen; with one, it waits on the call's Event. A backoff sleeps on
the clock, or waits as the client's `backoff_wait` says (a consumer without a network thread runs its loop instead).

Kept calls (the consumer's poll(0) in a loop): with `kept` (a dict the caller holds), a call still out at the
deadline is kept there under its route and request (or the caller's `key`), and the same ask made again (the next
poll) waits for that call instead of sending another; such a call has at least `min_call_ms` to be sent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from typing import Any, NamedTuple

from cykafka.errors import IllegalStateError, KafkaError, KafkaTimeoutError, NetworkError
from cykafka.ports import Clock
from cykafka.protocol import API_NAMES, Request
from cykafka.protocol.error_codes import ErrorKind, kinds_of
from cykafka.requests.calls import Call, CallQueue
from cykafka.requests.routes import Coordinator, Route

_TURN_MS = 100  # a driven wait runs the loop at most this long per turn (a close from another thread is seen)


class Answer(NamedTuple):
    node_id: int  # the broker that answered
    body: dict[str, Any]


Check = Callable[[Mapping[str, Any]], KafkaError | None]  # an answer's own error (e.g. a top-level error_code)


class Asker:
    """Asks a client's CallQueue and waits; see the module docstring. `closed()` ends every wait with an error
    naming `client`; `timeout_note()` says in a timeout's message which timeout set the deadline (the call's own
    timeout_ms, or the client's default)."""

    def __init__(self, calls: CallQueue, clock: Clock, retry_backoff_ms: int, *,
                 drive: Callable[[int], None] | None = None, closed: Callable[[], bool] = lambda: False,
                 client: str = "client", timeout_note: Callable[[], str] = lambda: "",
                 backoff_wait: Callable[[int], None] | None = None, min_call_ms: int = 0) -> None:
        self.calls = calls
        self.router = calls.router
        self.clock = clock
        self.retry_backoff_ms = retry_backoff_ms
        self.drive = drive
        self.closed = closed
        self.client = client
        self.timeout_note = timeout_note
        self.backoff_wait = backoff_wait
        self.min_call_ms = min_call_ms

    def ask(self, request: Request | None, route: Route, deadline_ms: int, *, check: Check | None = None,
            timeout_ms: int | None = None, once: bool = False, kept: dict[Hashable, Call] | None = None,
            key: Hashable = None, make: Callable[[int], Call] | None = None) -> Answer:
        """The answer to request on route, asked again after retry.backoff.ms while its failure is retriable, until
        deadline_ms; raises the failure that is not, KafkaTimeoutError at the deadline (naming the last failure).
        once: the first failure is raised (the caller routes again). kept: see the module docstring. make: builds
        the call (given its deadline) instead of Call(route, deadline, request), e.g. a group member's, built when
        it goes; it must be on route."""
        name = API_NAMES.get(request.api_key, "request") if request is not None else "request"
        last: KafkaError | None = None
        if kept is not None and key is None:
            key = (route, request.api_key if request is not None else None, repr(request.body if request else None))
        while True:
            self.check_open(name)
            call = kept.pop(key, None) if kept is not None else None
            if call is None:
                call_deadline_ms = max(deadline_ms, self.clock.monotonic_ms() + self.min_call_ms)
                call = make(call_deadline_ms) if make is not None else Call(route, call_deadline_ms, request,
                                                                            timeout_ms=timeout_ms)
                self.calls.submit(call)
            name = call.name
            self.wait(call.done, deadline_ms)
            self.check_open(name)
            if not call.done.is_set():
                if kept is not None:
                    kept[key] = call
                raise self.timed_out(name, last)
            error = call.error if call.error is not None or call.response is None else (
                check(call.response) if check is not None else None)
            if error is None:
                assert call.response is not None
                return Answer(call.answered_by, call.response)
            self.failed(route, error)
            if not (error.retriable or (make is not None and kinds_of(error.code) & ErrorKind.MEMBER_EPOCH_STALE)) \
                    or once:
                raise error
            last = error
            if self.clock.monotonic_ms() >= deadline_ms:
                raise self.timed_out(name, last)
            self.backoff(deadline_ms)

    def failed(self, route: Route, error: KafkaError) -> None:
        """What the failure says about the route (the error table's kinds; a lost coordinator is looked up again)."""
        self.router.failed(route, error)
        if isinstance(error, NetworkError) and isinstance(route, Coordinator):
            self.router.coordinators.forget(route)

    def wait(self, done: threading.Event, deadline_ms: int) -> None:
        """Until done is set, the deadline passes or the client closes."""
        while not done.is_set() and not self.closed():
            remaining_ms = deadline_ms - self.clock.monotonic_ms()
            if remaining_ms <= 0:
                return
            if self.drive is not None:
                self.drive(min(remaining_ms, _TURN_MS))
            else:
                done.wait(min(remaining_ms, _TURN_MS) / 1000)

    def backoff(self, deadline_ms: int) -> None:
        """retry.backoff.ms before asking again, never past the deadline."""
        wait_ms = max(0, min(self.retry_backoff_ms, deadline_ms - self.clock.monotonic_ms()))
        if self.backoff_wait is not None:
            self.backoff_wait(wait_ms)
        else:
            self.clock.sleep_ms(wait_ms)

    def check_open(self, name: str) -> None:
        if self.closed():
            raise IllegalStateError(f"{name}: the {self.client} is closed")

    def timed_out(self, name: str, last: KafkaError | None) -> KafkaTimeoutError:
        problem = getattr(self.calls.transport, "connection_problem", lambda: None)() or (
            last and f"last error: {last}")
        note = f" ({note})" if (note := self.timeout_note()) else ""
        return KafkaTimeoutError(f"{name}: no answer before the call's deadline{note}" + (
            f"; {problem}" if problem else ""))
