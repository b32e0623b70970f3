"""One call on many items, split by where each item's request goes (Java's AdminApiDriver and its lookup strategies):
partitions by their leader, groups by their coordinator, topics by the controller, resources by their broker.

Owns the per-item loop: a lookup gives each item its route, its own error (final: no such partition), or `Again` (no
route yet: a partition without a leader, looked up again as soon as the metadata answers, at most retry.backoff.ms
later, Java's awaitMetadataUpdate); items of one route go in one request (`batch`) or one request each; the answer is
read per item (a value, or the item's typed error). Whether an item is asked again is the error table's word: its error
must be retriable, and when its kinds say a route moved (STALE_METADATA, COORDINATOR_MOVED / COORDINATOR_LOADING,
CONTROLLER_MOVED) it must be the kind of route this call uses (`moves`): a DeleteTopics answering
UNKNOWN_TOPIC_OR_PARTITION (stale metadata, for a leader) is final at the controller, NOT_LEADER_OR_FOLLOWER for a
ListOffsets is asked again of the new leader. Asked again means after retry.backoff.ms, its route looked up afresh (the
kinds marked what went stale), until the deadline, when the item keeps its last error (also when the lookup itself was
not answered by then). A whole request failing with a broker's error or UnsupportedVersionError fails its items; with
`reroute` (routes resolved from metadata, as the consumer's leaders) a retriable failure of the whole request (its
broker died) sends its items back to the lookup after a metadata update, and one still without an answer at the deadline
ends with a KafkaTimeoutError naming that last failure (Java's AdminApiDriver: the key's future times out); any other
failure (no broker reached before the deadline, the client closed) fails the call. `kept`: the Asker's kept calls (a
call still out at the deadline is waited for by the same call made again).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

from cykafka.errors import BrokerResponseError, KafkaError, KafkaTimeoutError, UnsupportedVersionError
from cykafka.ports.values import Result
from cykafka.protocol import API_NAMES, Request
from cykafka.protocol.error_codes import NO_KIND, ErrorKind, kinds_of
from cykafka.requests.ask import Asker
from cykafka.requests.calls import Call
from cykafka.requests.routes import Route

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

ROUTE_MOVED = (ErrorKind.STALE_METADATA | ErrorKind.COORDINATOR_MOVED | ErrorKind.COORDINATOR_LOADING
               | ErrorKind.CONTROLLER_MOVED)  # the kinds that say where a request goes has changed
LEADER_MOVED = ErrorKind.STALE_METADATA
COORDINATOR_MOVED = ErrorKind.COORDINATOR_MOVED | ErrorKind.COORDINATOR_LOADING
CONTROLLER_MOVED = ErrorKind.CONTROLLER_MOVED
_METADATA_LOOK_MS = 2  # how often an item without a route looks whether the metadata answered



class Again(NamedTuple):
    """A lookup's answer for an item with no route yet: look it up again; error is its result if the deadline
    passes first."""

    error: KafkaError


Lookup = Callable[[list[K]], Mapping[K, Route | KafkaError | Again]]  # each item's route, final error, or Again
Build = Callable[[list[K]], Request]  # the request for items of one route
Read = Callable[[list[K], Mapping[str, Any], int], Mapping[K, V | KafkaError]]  # (items, answer, node) per item


class Fanout(Generic[K, V]):
    """lookup -> one request per route (per item unless batch) -> per-item results; see the module docstring."""

    def __init__(self, asker: Asker, lookup: Lookup[K], build: Build[K], read: Read[K, V], *,
                 moves: ErrorKind = NO_KIND, batch: bool = True, name: Callable[[K], str] = str,
                 reroute: bool = False, kept: dict[Hashable, Call] | None = None) -> None:
        """moves: the kinds that say this call's routes moved (LEADER_MOVED, COORDINATOR_MOVED, CONTROLLER_MOVED);
        name: an item as error messages name it; reroute, kept: see the module docstring."""
        self.reroute = reroute
        self._rerouted: set[K] = set()  # in run(): their last try was a whole request that failed, sent back
        self._api = ""  # the API asked, as messages name it
        self.kept = kept
        self.moves = moves
        self.asker = asker
        self.lookup = lookup
        self.build = build
        self.read = read
        self.batch = batch
        self.name = name

    def run(self, items: Iterable[K], deadline_ms: int) -> dict[K, Result[V]]:
        """Every item's Result, in the items' order."""
        wanted = list(items)
        results: dict[K, Result[V]] = {}
        self._rerouted.clear()
        pending = wanted
        while pending:
            try:
                routes = self.lookup(pending)
            except KafkaTimeoutError:
                if not all(item in results for item in pending):
                    raise
                break  # looked up again until the deadline: each item keeps its last error
            by_route: dict[Route, list[K]] = defaultdict(list)
            retry: list[K] = []
            for item in pending:
                route = routes.get(item)
                if isinstance(route, KafkaError):
                    results[item] = Result(error=route)
                elif isinstance(route, Again):
                    results[item] = Result(error=route.error)
                    retry.append(item)
                elif route is None:
                    retry.append(item)
                else:
                    by_route[route].append(item)
            unrouted = len(retry)
            for route, group in by_route.items():
                for part in [group] if self.batch else [[item] for item in group]:
                    retry += self._ask(route, part, deadline_ms, results)
            asked_again = set(retry)
            pending = [item for item in pending if item in asked_again]  # in the items' order
            if pending and self.asker.clock.monotonic_ms() + self.asker.retry_backoff_ms >= deadline_ms:
                break
            if pending and unrouted == len(retry):
                self._await_metadata(deadline_ms)
            elif pending:
                self.asker.backoff(deadline_ms)
        for item in pending:
            error = results[item].error if item in self._rerouted and item in results else None
            if error is not None:
                timeout = KafkaTimeoutError(f"{self.name(item)}: {self._api} not answered before the deadline; last: "
                                            f"{error}")
                timeout.__cause__ = error
                results[item] = Result(error=timeout)
        for item in wanted:
            results.setdefault(item, Result(error=KafkaError(f"{self.name(item)}: no route found before the "
                                                             f"deadline")))
        return {item: results[item] for item in wanted}

    def _await_metadata(self, deadline_ms: int) -> None:
        """Items with no route yet (a partition whose leader the metadata does not know) wait for the next metadata
        answer, at most retry.backoff.ms (Java's awaitMetadataUpdate), not a whole backoff: the first ListOffsets
        after assign() goes as soon as the topic's metadata is in."""
        asker = self.asker
        metadata = asker.router.metadata
        if metadata is None:
            asker.backoff(deadline_ms)
            return
        before = metadata.snapshot()
        end_ms = min(deadline_ms, asker.clock.monotonic_ms() + asker.retry_backoff_ms)
        while metadata.snapshot() is before and (now_ms := asker.clock.monotonic_ms()) < end_ms:
            asker.backoff(min(end_ms, now_ms + _METADATA_LOOK_MS))

    def _ask(self, route: Route, items: list[K], deadline_ms: int, results: dict[K, Result[V]]) -> list[K]:
        """Asks for items on route, files their results; returns those to ask again."""
        request = self.build(items)
        self._api = API_NAMES.get(request.api_key, str(request.api_key))
        try:
            answer = self.asker.ask(request, route, deadline_ms, once=self.reroute, kept=self.kept)
        except (BrokerResponseError, UnsupportedVersionError) as e:  # this route cannot answer: each item says so
            results.update((item, Result(error=e)) for item in items)
            return []
        except KafkaError as e:
            if isinstance(e, KafkaTimeoutError):  # still out at the deadline
                if self.reroute and all(item in self._rerouted for item in items):
                    return items  # asked again after a failure: each keeps its last one (run() says timed out)
                raise
            if not (self.reroute and e.retriable):
                raise
            results.update((item, Result(error=e)) for item in items)
            self._rerouted.update(items)
            metadata = self.asker.router.metadata
            if metadata is not None:
                metadata.request_update()  # its broker may be gone: its items' new route
            return items
        self._rerouted.difference_update(items)
        outcomes = self.read(items, answer.body, answer.node_id)
        retry = []
        for item in items:
            outcome = outcomes.get(item, KafkaError(f"{self.name(item)}: the broker's answer left it out"))
            if isinstance(outcome, KafkaError):
                results[item] = Result(error=outcome)
                self.asker.failed(route, outcome)
                if self.asks_again(outcome):
                    retry.append(item)
            else:
                results[item] = Result(outcome)
        return retry

    def asks_again(self, error: KafkaError) -> bool:
        """The error table's word on an item's error: retriable, and when it says a route moved, a route of the
        kind this call uses."""
        kinds = kinds_of(error.code)
        return error.retriable and (not kinds & ROUTE_MOVED or bool(kinds & self.moves))
