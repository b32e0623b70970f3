"""aiokafka.errors' names: kafka-python's (cykafka.compat.kafka.errors: aiokafka's errors module re-exports them)
and aiokafka's own, each a cykafka KafkaError; `from cykafka.compat.aiokafka.errors import ...` works as
`from aiokafka.errors import ...` does."""

from __future__ import annotations

from cykafka.compat.kafka.errors import *  # noqa: F403 (aiokafka.errors carries kafka-python's names too)
from cykafka.compat.kafka.errors import KafkaConfigurationError, KafkaError


class IllegalOperation(KafkaError):
    """aiokafka's: a call the client's state does not allow (send outside a transaction, commit without group_id)."""


class ProducerClosed(KafkaError):
    """aiokafka's: the producer was stopped (send after stop)."""


class ConsumerStoppedError(KafkaError):
    """aiokafka's: the consumer was stopped (getone / getmany after stop)."""


class ProducerFenced(KafkaError):
    """aiokafka's: another producer with the same transactional_id took over."""


class RecordTooLargeError(KafkaError):
    pass


class UnknownArgumentError(KafkaConfigurationError, TypeError):
    """A kwarg aiokafka does not know: aiokafka's constructors raise TypeError for it (a keyword they do not take)."""
