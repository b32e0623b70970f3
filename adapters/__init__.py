"""cykafka.adapters: implementations of the ports, each named after its technology."""
