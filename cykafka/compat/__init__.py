"""Drop-in layers that speak the peers' APIs over cykafka's own clients: change the import, keep the code.

`cykafka.compat.confluent_kafka` (confluent-kafka's), `cykafka.compat.kafka` (kafka-python's) and
`cykafka.compat.aiokafka` (aiokafka's). Each is a thin shape over Producer / Consumer / Admin / the asyncio clients:
no second protocol implementation; docs/migrating.md lists what is identical and what differs.
"""
