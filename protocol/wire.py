"""What a transport calls for every request it carries, whatever the API: the one dispatch between the hand-written
Produce and Fetch hot paths (`produce`, `fetch`) and the generic codec (`frames`).

Owns: `TransportRequest` (a `Request`, or the hand-written `ProduceRequest`), `encode_any_request` (a request's frame
as buffers for `socket.sendmsg`) and `decode_any_response` (an answer's frame as the generic codec's dict). The socket
transport and the fake cluster's wire mode call these two and nothing else of the protocol's codecs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cykafka.protocol.apis import FETCH, PRODUCE
from cykafka.protocol.fetch import decode_fetch_response, encode_fetch_request
from cykafka.protocol.frames import Request, decode_response, encode_request
from cykafka.protocol.produce import ProduceRequest, decode_produce_response, encode_produce_request

if TYPE_CHECKING:
    from typing_extensions import Buffer

TransportRequest = Request | ProduceRequest  # what a Transport carries


def encode_any_request(request: TransportRequest, version: int, correlation_id: int,
                       client_id: str | None) -> list[bytes | memoryview]:
    """A transport's request frame: Produce and Fetch by hand (Produce's batches uncopied), every other API by the
    generic codec."""
    if type(request) is ProduceRequest:
        return encode_produce_request(request, version, correlation_id, client_id)
    assert isinstance(request, Request)
    if request.api_key == FETCH.key:
        return [encode_fetch_request(version, correlation_id, client_id, request.body)]
    return [encode_request(request.api_key, version, correlation_id, client_id, request.body)]


def decode_any_response(api_key: int, version: int, frame: Buffer) -> tuple[int, dict[str, Any]]:
    """A transport's answer: (correlation_id, body as the generic codec's dict); Produce's and Fetch's by their hot
    paths."""
    if api_key == PRODUCE.key:
        return decode_produce_response(version, frame)
    if api_key == FETCH.key:
        return decode_fetch_response(version, frame)
    return decode_response(api_key, version, memoryview(frame))
