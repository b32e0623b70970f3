"""TopicMetadataFetcher (Java's consumer TopicMetadataFetcher): a topic's partitions for Consumer.partitions_for.

Owns: asking the metadata for one topic and waiting (bounded by the call's deadline) until it lists the topic's
partitions, or until an answer asked for after the wait began says the topic does not exist. The wait looks every
METADATA_LOOK_MS whether an answer came (Java's waits on the Metadata request itself): the metadata paces its
requests by retry.backoff.ms, so looking often asks no more often, and a first answer is seen when it arrives
instead of a whole retry.backoff.ms later.
"""

from __future__ import annotations

from collections.abc import Callable

from cykafka.errors import KafkaTimeoutError
from cykafka.ports import Clock, MetadataSource, PartitionInfo
from cykafka.protocol.error_codes import ErrorCode

METADATA_LOOK_MS = 2  # how often a wait for a topic's metadata looks whether an answer came


class TopicMetadataFetcher:
    def __init__(self, metadata: MetadataSource, clock: Clock, wakeup: Callable[[], None],
                 backoff: Callable[[int], None]) -> None:
        self.metadata = metadata
        self.clock = clock
        self.wakeup = wakeup
        self.backoff = backoff

    def partitions_for(self, topic: str, deadline_ms: int) -> list[PartitionInfo]:
        """The topic's partitions from the metadata, waiting for them until deadline_ms (KafkaTimeoutError); [] when
        the cluster answers that the topic does not exist (Java's: auto-creation off at the broker, or
        allow.auto.create.topics false here), at once instead of after the timeout."""
        asked = None  # the snapshot when the metadata was asked for: an answer after it may say "no such topic"
        while True:
            snapshot = self.metadata.snapshot()
            parts = snapshot.partitions.get(topic)
            if parts:
                return list(parts)
            if (asked is not None and snapshot is not asked
                    and snapshot.topic_errors.get(topic) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                return []
            if asked is None:
                asked = snapshot
            self.metadata.add_topic(topic, self.clock.monotonic_ms())
            self.metadata.request_update()
            self.wakeup()
            if self.clock.monotonic_ms() >= deadline_ms:
                raise KafkaTimeoutError(f"partitions_for({topic!r}): no metadata for the topic before the timeout")
            self.backoff(min(deadline_ms, self.clock.monotonic_ms() + METADATA_LOOK_MS))
