"""The Kafka protocol as data: each API described once, its encoders and decoders made from the description.

Owns: the notation (`schema`: `F`, `api`), the descriptions of every API cykafka speaks (`apis`, with the version
tables derived from them: SUPPORTED_VERSIONS, FLEXIBLE_FROM, API_NAMES), the generic body codec (`codec`) and frames
with their request/response headers (`frames`). No sockets, no clocks: dicts in, bytes out, and back.

Why compiled at first use rather than generated code: the plans are closures built from the descriptions the first
time an (API, version, direction) is used and cached, so the description is the only source (no generated file to
keep in step, no "regenerate" step to forget) and importing costs nothing for the ~400 plans never used. Hot paths
(Produce request encoding, ProduceResponse and later FetchResponse decoding) stay hand-written where speed matters,
each with a test that it equals this codec.
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
from cykafka.protocol.produce import (
    ProduceRequest,
    TransportRequest,
    decode_any_response,
    decode_produce_response,
    encode_any_request,
    encode_produce_request,
)
from cykafka.protocol.schema import Api, F, Field, api

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
