"""The production adapters a consumer runs on where its Ports (tests) give none: one place for the Consumer and the
ShareConsumer to build their socket transport and broker metadata."""

from __future__ import annotations

from cykafka.adapters.broker_metadata import BrokerMetadata
from cykafka.adapters.socket_transport import SocketTransport
from cykafka.ports import Clock, ConnectionSettings, MetadataSettings, MetadataSource, Ports, Transport


def consumer_adapters(ports: Ports, connection: ConnectionSettings, metadata: MetadataSettings,
                      clock: Clock) -> tuple[Transport, MetadataSource]:
    """The ports' transport and metadata, else a SocketTransport on the consumer's clock and a BrokerMetadata on it
    (the consumer owns, and closes, a transport it did not get: `ports.transport is None`)."""
    transport = ports.transport or SocketTransport(connection, clock_ms=clock.monotonic_ms)
    return transport, ports.metadata or BrokerMetadata(metadata, transport)
