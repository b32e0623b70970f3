"""The Kafka protocol as data: each API described once, its encoders and decoders made from the description.

Owns: the notation (`schema`: `F`, `api`), the descriptions of every API cykafka speaks (`apis`, with the version
tables derived from them: SUPPORTED_VERSIONS, FLEXIBLE_FROM, API_NAMES), the generic body codec (`codec`), frames
with their request/response headers (`frames`), the Produce and Fetch hot paths (`produce`, `fetch`), the one
dispatch a transport calls for any request (`wire`), Kafka's error codes (`error_codes`), the consumer protocol's
embedded structs (`consumer_protocol`) and SCRAM's hashes, bounds and salting (`scram`). No sockets, no clocks: dicts
in, bytes out, and back.

An inner layer (the folder `protocol/`, installed as `cykafka.protocol`): it imports nothing of cykafka but the
errors (`errors/`, installed as `cykafka.errors`), so the core, the ports and the adapters can all stand on it.

Why compiled at first use rather than generated code: the plans are closures built from the descriptions the first
time an (API, version, direction) is used and cached, so the description is the only source (no generated file to
keep in step, no "regenerate" step to forget) and importing costs nothing for the ~400 plans never used. Hot paths
(Produce and Fetch requests and answers, what a client sends and reads on every turn of its network threads) stay
hand-written where speed matters, each with a test that it equals this codec.
"""

from cykafka.protocol.apis import API_NAMES, APIS, FLEXIBLE_FROM, SUPPORTED_VERSIONS
from cykafka.protocol.codec import decode_message, encode_message
from cykafka.protocol.frames import (
    Request,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from cykafka.protocol.produce import ProduceRequest, decode_produce_response, encode_produce_request
from cykafka.protocol.schema import Api, F, Field, api
from cykafka.protocol.wire import TransportRequest, decode_any_response, encode_any_request

__all__ = [
    "APIS",
    "API_NAMES",
    "FLEXIBLE_FROM",
    "SUPPORTED_VERSIONS",
    "Api",
    "F",
    "Field",
    "ProduceRequest",
    "Request",
    "RequestHeader",
    "TransportRequest",
    "api",
    "decode_any_response",
    "decode_message",
    "decode_produce_response",
    "decode_request",
    "decode_response",
    "encode_any_request",
    "encode_message",
    "encode_produce_request",
    "encode_request",
    "encode_response",
]
