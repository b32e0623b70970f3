"""AsyncShareConsumer: the ShareConsumer (share groups, KIP-932) for asyncio (cykafka.aio.AsyncShareConsumer).

Every call that touches the ShareConsumer runs on the consumer's own thread, in call order (cykafka/aio.py's
_ClientThread: a ShareConsumer is one thread's), so acknowledge and the commits are coroutines too; the event loop
never blocks. The acknowledgement commit callback runs on that thread (hop to the loop with
loop.call_soon_threadsafe). Cancelling an awaited poll drops its records unacknowledged: in explicit mode the next
poll raises as after any poll whose records were not acknowledged; close releases them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from types import TracebackType

from cykafka.aio import _ClientThread
from cykafka.share_consumer import AcknowledgementCommitCallback, AcknowledgeType, ShareConsumer, ShareRecord
from cykafka.share_network import AckResults


class AsyncShareConsumer:
    """`async with AsyncShareConsumer({...}) as consumer:`, `await consumer.subscribe([...])`, then
    `records = await consumer.poll(1.0)`, `await consumer.acknowledge(record, AcknowledgeType.ACCEPT)` (explicit
    mode), `await consumer.commit_sync()`. Config keys as ShareConsumer's (docs/share-groups.md)."""

    def __init__(self, config: Mapping[str, object] | None = None, /, **kwargs: object) -> None:
        self._consumer = ShareConsumer(config, **kwargs)
        self._thread = _ClientThread(f"cykafka-aio-share-{self._consumer.member_id}")

    @property
    def consumer(self) -> ShareConsumer:
        """The sync ShareConsumer underneath (leave it to this AsyncShareConsumer's thread)."""
        return self._consumer

    async def subscribe(self, topics: Iterable[str]) -> None:
        await self._thread.run(self._consumer.subscribe, list(topics))

    async def poll(self, timeout: float) -> list[ShareRecord]:
        """ShareConsumer.poll on the consumer's thread: waits up to timeout seconds without blocking the loop."""
        return await self._thread.run(self._consumer.poll, timeout)

    async def acknowledge(self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        await self._thread.run(self._consumer.acknowledge, record, type)

    async def commit_sync(self, timeout: float | None = None) -> AckResults:
        return await self._thread.run(self._consumer.commit_sync, timeout)

    async def commit_async(self) -> None:
        await self._thread.run(self._consumer.commit_async)

    async def set_acknowledgement_commit_callback(self, callback: AcknowledgementCommitCallback | None) -> None:
        await self._thread.run(self._consumer.set_acknowledgement_commit_callback, callback)

    async def close(self, timeout: float = 30.0) -> None:
        """ShareConsumer.close within timeout seconds (a poll waiting on the consumer's thread is not waited out:
        close runs beside it, as the sync close may)."""
        await asyncio.to_thread(self._consumer.close, timeout)
        self._thread.shutdown()

    async def __aenter__(self) -> AsyncShareConsumer:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()
