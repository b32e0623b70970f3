"""cykafka.ports: the typing.Protocol interfaces the Sender and Producer depend on (adapters implement them)."""
