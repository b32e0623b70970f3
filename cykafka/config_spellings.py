"""Other clients' spellings of configuration: the keys of librdkafka (confluent-kafka), kafka-python and aiokafka
that mean what one of ours means (ALIASES), the ones refused with what to use instead (NOT_ALIASES: one table, every
client's refusal quotes it), and librdkafka's `debug` contexts as cykafka's loggers (DEBUG_CONTEXTS).
cykafka/config.py applies them; docs/migrating.md and docs/config.md explain them.
"""

from __future__ import annotations

from cykafka import ports
from cykafka.errors import DOCS_URL

# librdkafka's `debug` contexts -> the loggers they set to DEBUG (cykafka's logger names: docs/observability.md)
DEBUG_CONTEXTS = {
    "generic": ("cykafka",), "all": ("cykafka",),
    "broker": ("cykafka.network",), "protocol": ("cykafka.network",), "metadata": ("cykafka.network",),
    "topic": ("cykafka.network",), "conf": ("cykafka.config",), "security": ("cykafka.security",),
    "msg": ("cykafka.producer",), "queue": ("cykafka.producer",), "partition": ("cykafka.producer",),
    "eos": ("cykafka.transactions", "cykafka.producer"), "idempotence": ("cykafka.transactions",),
    "cgrp": ("cykafka.group",), "assignor": ("cykafka.group",), "consumer": ("cykafka.consumer", "cykafka.group"),
    "fetch": ("cykafka.consumer",), "admin": ("cykafka.admin",), "mock": (), "interceptor": (), "plugin": (),
    "sasl": ("cykafka.security",), "telemetry": ("cykafka.telemetry",),
}

ALIASES = {
    # librdkafka (confluent-kafka)
    "metadata.broker.list": "bootstrap.servers",
    "queue.buffering.max.ms": "linger.ms",
    "compression.codec": "compression.type",
    "message.max.bytes": "max.request.size",
    "request.required.acks": "acks",
    "message.timeout.ms": "delivery.timeout.ms",
    "message.send.max.retries": "retries",
    "max.in.flight": "max.in.flight.requests.per.connection",
    "topic.metadata.refresh.interval.ms": "metadata.max.age.ms",
    "sasl.mechanisms": "sasl.mechanism",
    # kafka-python and aiokafka keyword arguments (ssl_cafile=... arrives as ssl.cafile)
    "ssl.cafile": "ssl.ca.location",
    "ssl.certfile": "ssl.certificate.location",
    "ssl.keyfile": "ssl.key.location",
    "ssl.password": "ssl.key.password",
    "sasl.plain.username": "sasl.username",
    "sasl.plain.password": "sasl.password",
    "max.batch.size": "batch.size",  # aiokafka
    "oauth.cb": "oauth_cb",  # oauth_cb=... as a keyword argument
    "error.cb": "error_cb",  # error_cb=... as a keyword argument
    "fetch.wait.max.ms": "fetch.max.wait.ms",  # librdkafka
    "fetch.message.max.bytes": "max.partition.fetch.bytes",  # librdkafka
    "partition.eof.cb": "partition_eof_cb",  # partition_eof_cb=... as a keyword argument
    "socket.send.buffer.bytes": "send.buffer.bytes",  # librdkafka; its 0 (the OS default) is cykafka's too
    "socket.receive.buffer.bytes": "receive.buffer.bytes",
    "max.partition.fetch.bytes.config": "max.partition.fetch.bytes",
    "stats.cb": "stats_cb",  # stats_cb=... as a keyword argument
}

_ON_DELIVERY_INSTEAD = ("no producer-wide delivery callback: pass on_delivery=callback to send(); it is called "
                        "with (err, metadata) for every record, delivered or failed")
# Other clients' keys with no same-semantics key here: what does the job instead, or why nothing does.
NOT_ALIASES = {
    "queue.buffering.max.kbytes": "buffer.memory (bytes) bounds the queue instead, with other semantics, so it is "
    "not an alias: librdkafka fails produce() with QUEUE_FULL when its queue is full, cykafka's send() blocks up to "
    "max.block.ms (Java's), and buffer.memory counts whole batch buffers of batch.size bytes, not record bytes; "
    "for a similar bound set buffer.memory to kbytes * 1024",
    "queue.buffering.max.messages": "cykafka has no limit on the number of queued records: buffer.memory (bytes) "
    "bounds the queue, and send() blocks up to max.block.ms when it is full (Java's producer)",
    "batch.num.messages": "cykafka has no per-batch record count limit (Java's producer has none either): a batch is "
    "bounded by its size in bytes, batch.size, which is what the broker's limits and buffer.memory are about; "
    "batch.size counts bytes, so it is no substitute for a count",
    "enable.ssl.certificate.verification": "cykafka always verifies the broker's certificate (against "
    "ssl.ca.location, by default the system's CAs) and this cannot be turned off; for a broker with a self-signed "
    "certificate give its CA in ssl.ca.location; the hostname check is ssl.endpoint.identification.algorithm",
    "compression.level": "cykafka has one level per codec, as Java: compression.gzip.level, compression.lz4.level, "
    "compression.zstd.level",
    "socket.timeout.ms": "request.timeout.ms bounds each request (as in Java, it is also the broker's ack timeout "
    "sent in Produce requests)",
    "partitioner": "keyed records go to murmur2(key) % partitions, Java's (librdkafka's murmur2_random, the default "
    "of kafka-python and aiokafka; librdkafka's default consistent_random differs); for another choice, "
    "partitioner.class: a callable (topic, key, key_bytes, value, value_bytes, num_partitions) -> partition",
    "sticky.partitioning.linger.ms": "the built-in partitioner (Java's, KIP-794) moves a keyless stream to another "
    "partition after batch.size bytes, not after a time",
    "dr.cb": _ON_DELIVERY_INSTEAD,
    "dr.msg.cb": _ON_DELIVERY_INSTEAD,
    "on.delivery": _ON_DELIVERY_INSTEAD,
    "delivery.report.only.error": _ON_DELIVERY_INSTEAD,
    "logger": "cykafka logs through the logging module, on the logger named 'cykafka' and its children "
    f"(cykafka.network, cykafka.producer, ...: {DOCS_URL}observability.md); client-level errors go to error_cb",
    "api.version.request": "cykafka asks each broker for its API versions (ApiVersions) and uses the highest both "
    "support; there is nothing to set",
    "api.version": "cykafka asks each broker for its API versions (ApiVersions) and uses the highest both support; "
    "there is nothing to set",
    "sasl.oauth.token.provider": "use oauth_cb: a callable (sasl.oauthbearer.config) -> (token, expiry_time_s), as "
    "in confluent-kafka",
    "ssl.context": "give PEM files instead: ssl.ca.location, ssl.certificate.location, ssl.key.location and "
    "ssl.key.password; an SSLContext object is not taken",
    "ssl.truststore.location": "cykafka reads PEM files, not Java keystores: ssl.ca.location (a PEM CA file or "
    "directory)",
    "ssl.keystore.location": "cykafka reads PEM files, not Java keystores: ssl.certificate.location and "
    "ssl.key.location",
    "sasl.jaas.config": "no JAAS: set sasl.mechanism, sasl.username and sasl.password (oauth_cb for OAUTHBEARER)",
    "sasl.kerberos.service.name": "GSSAPI (Kerberos) is not supported; sasl.mechanism accepts "
    + ", ".join(ports.SASL_MECHANISMS),
    # the consumer's, from librdkafka and kafka-python
    "enable.auto.offset.store": "no offset store: with enable.auto.commit=true the consumer commits the positions "
    "of what poll() returned; to commit only what you processed, set enable.auto.commit=false and call "
    "consumer.commit(offsets)",
    "queued.min.messages": "the consumer prefetches one Fetch per broker while the caller works (Java's); size it "
    "with fetch.max.bytes and max.partition.fetch.bytes, and hand out at most max.poll.records per poll()",
    "queued.max.messages.kbytes": "the consumer's prefetch is one Fetch per broker, bounded by fetch.max.bytes "
    "(bytes) and max.partition.fetch.bytes",
    "fetch.error.backoff.ms": "use retry.backoff.ms (Java's backoff after a failed fetch)",
    "fetch.queue.backoff.ms": "nothing to set: the next Fetch goes out as soon as a broker's buffered data is "
    "handed out (Java's prefetch)",
    "consumer.timeout.ms": "give the time to poll(timeout) instead (kafka-python's iterator stops after "
    "consumer_timeout_ms; cykafka's poll returns [] after its timeout)",
    "socket.nagle.disable": "nothing to set: cykafka always disables Nagle (TCP_NODELAY), as Java does",
    "broker.address.family": "use client.dns.lookup (use_all_dns_ips tries every address a name resolves to, IPv4 "
    "and IPv6, in turn)",
    "log.connection.close": "connection losses are logged at INFO on the cykafka.network logger; failures to connect "
    f"at WARNING once per series ({DOCS_URL}observability.md)",
    "log.level": "use Python's logging: logging.getLogger('cykafka').setLevel(...), or debug=<librdkafka contexts> "
    "for DEBUG on those components",
    "log.queue": "cykafka logs through Python's logging module on the thread that has something to say; there is no "
    "log queue to serve",
    "group.protocol.type": "the classic group protocol's type is always consumer here; nothing to set (for KIP-848's "
    "protocol: group.protocol=consumer)",
    "offset.store.method": "offsets are stored in Kafka (OffsetCommit), as Java's; nothing to set",
    "check.crcs.enable": "use check.crcs",
    "offset.commit.cb": "pass the callback to consumer.commit_async(offsets, callback=...): it is called with "
    "(error, offsets) from a later poll() or commit() (Java's OffsetCommitCallback)",
    "on.assign": "pass a listener to consumer.subscribe(topics, listener=...) with on_partitions_assigned / "
    "on_partitions_revoked / on_partitions_lost methods (Java's ConsumerRebalanceListener)",
    "on.revoke": "pass a listener to consumer.subscribe(topics, listener=...) with on_partitions_revoked (Java's "
    "ConsumerRebalanceListener)",
    "rebalance.cb": "pass a listener to consumer.subscribe(topics, listener=...) with on_partitions_assigned / "
    "on_partitions_revoked / on_partitions_lost methods (Java's ConsumerRebalanceListener)",
    "enable.gapless.guarantee": "no such mode: with enable.idempotence (the default) records of a partition are "
    "written in order without duplicates, and a record that fails is reported by its future and on_delivery; for "
    "all-or-nothing writes use transactions (transactional.id)",
    "ssl.ca.pem": "give a file: ssl.ca.location (a PEM file or directory)",
    "ssl.certificate.pem": "give a file: ssl.certificate.location",
    "ssl.key.pem": "give a file: ssl.key.location",
}
