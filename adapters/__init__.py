"""cykafka.adapters: implementations of the ports, each named after its technology."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # each adapter against its port: mypy --strict checks these assignments structurally
    from cykafka.adapters.broker_metadata import BrokerMetadata
    from cykafka.adapters.clock import ManualClock, SystemClock
    from cykafka.adapters.compression import GzipCompressor, Lz4Compressor, SnappyCompressor, ZstdCompressor
    from cykafka.adapters.fake_cluster import FakeCluster
    from cykafka.adapters.socket_transport import SocketTransport
    from cykafka.ports import Clock, Compressor, MetadataSource, Transport

    _TRANSPORTS: tuple[type[Transport], ...] = (SocketTransport, FakeCluster)
    _METADATA_SOURCES: tuple[type[MetadataSource], ...] = (BrokerMetadata,)
    _CLOCKS: tuple[type[Clock], ...] = (SystemClock, ManualClock)
    _COMPRESSORS: tuple[type[Compressor], ...] = (GzipCompressor, SnappyCompressor, Lz4Compressor, ZstdCompressor)
