"""The consumer's network thread: the thin shell that loops the request layer's NetworkLoop.run_once (one turn:
metadata, every request source, one transport poll; cykafka/requests/calls.py), as the producer's SenderThread loops
Sender.run_once. The consumer's request sources: its calls (`CallQueue`), the group driver, the coordinator cache's
lookups and the Fetcher. Only this thread touches the transport; other threads hand work over through locked queues
and `transport.wakeup()`. `stop_network`: how close() ends the thread; `stop_unclosed`: what a consumer dropped
without close() does to it. Consumer and ShareConsumer run on it.
"""

from __future__ import annotations

import logging
import threading
import warnings

from cykafka.ports import Transport
from cykafka.requests.calls import NetworkLoop

log = logging.getLogger("cykafka.consumer")


class NetworkThread(threading.Thread):
    """Loops NetworkLoop.run_once until `network.running` is False; an unexpected error is logged and the loop goes
    on (nothing but close() ends it)."""

    def __init__(self, network: NetworkLoop, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.network = network
        self.last_error: BaseException | None = None
        self.transport_to_close: Transport | None = None  # set when the consumer was dropped unclosed

    def run(self) -> None:
        network = self.network
        while network.running:
            try:
                network.run_once()
            except BaseException as e:  # nothing ends this thread but close()
                if type(e) is not type(self.last_error) or str(e) != str(self.last_error):
                    log.error("unexpected error in the consumer's network loop; continuing", exc_info=e)
                self.last_error = e
                network.clock.sleep_ms(10)
        if self.transport_to_close is not None:
            self.transport_to_close.close(0)


def stop_network(network: NetworkLoop, thread: NetworkThread | None, owned: Transport | None,
                 remaining_s: float) -> None:
    """The end of close(): the loop stops, its thread is waited for up to remaining_s; the transport the consumer
    owns is closed now, or by the thread as it ends when it is still running (only that thread touches it)."""
    network.running = False
    network.transport.wakeup()
    if thread is not None and thread.is_alive():
        thread.transport_to_close = owned
        thread.join(max(0.0, remaining_s))
    elif owned is not None:
        owned.close(0.0)


def stop_unclosed(client_id: str, thread: NetworkThread | None, network: NetworkLoop,
                  transport: Transport | None) -> None:
    """A Consumer nobody references was never closed: warn as an unclosed file does, stop its network thread, which
    then closes the transport it owned. Never blocks (a finalizer)."""
    warnings.warn(f"unclosed cykafka Consumer {client_id!r}: close() it, or use it in a with block",
                  ResourceWarning, stacklevel=2)
    if thread is not None and thread.is_alive():
        thread.transport_to_close = transport
    elif transport is not None:
        transport.close(0)
    network.running = False
    network.transport.wakeup()
