# The compiled core: one extension module built from the included .pyx files (asyncpg/uvloop idiom).
# Rules: no I/O, no clock reads (time arrives as now_ms, or through a CoreClock it is handed), no codec imports (a
# Compressor is passed in), no threads.
from cykafka.errors import (
    AuthenticationError,
    AuthorizationError,
    BatchDeliveryError,
    CorruptRecordError,
    InvalidArgumentError,
    InvalidRecordError,
    MissingDependencyError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
    ProducerFencedError,
    RecordTooLargeError,
    SerializationError,
    TimestampOverflowError,
    TransactionAbortableError,
    TransactionFatalError,
    TransactionStateError,
    UnsupportedVersionError,
)

# Two layers in one module (included in dependency order, not by layer):
# - the pure core, under the rules above: checksum, partitioner, pool, records, arrow (the record columns builder),
#   fetch (the consumer's record decoder), fetch_pump (a steady fetch session's next Fetch written from the answer's
#   batch headers), peer_records (its records in the compat layers' peer shapes),
#   batchresult, accumulator, transaction_manager (the state table and sequences; its requests are
#   cykafka/transactions.py);
# - the compiled shell, send()'s per-record edge kept in C for speed: sendpath (send() and send_batch()'s loop),
#   aiofutures (the asyncio futures of AsyncProducer.send, resolved a batch at a time), lock (the clients' lock),
#   columns (send_batch's inputs), trace_gate (whether send() calls the tracing hook), clock (SystemCoreClock reads
#   clock_gettime, PortClock calls the Clock port), netio (the network threads' system calls without the GIL, the
#   fetch pumps' reads and writes in the wait, and the GIL handed back to them by send() and poll()).
# The shell calls the core; the core reaches the shell only through the CoreClock (clock.pyx) an append is handed.
# Declarations: each included <name>.pyx has <name>.pxd beside it (its cdef classes' fields and C methods, the structs
# and constants they pass), included in this order by this module's own .pxd, core/pxd/cykafka/core/_core.pxd.
include "checksum.pyx"
include "clock.pyx"
include "netio.pyx"
include "partitioner.pyx"
include "pool.pyx"
include "lock.pyx"
include "records.pyx"
include "arrow.pyx"
include "fetch.pyx"
include "fetch_pump.pyx"
include "peer_records.pyx"
include "refs.pyx"
include "batchresult.pyx"
include "accumulator.pyx"
include "columns.pyx"
include "trace_gate.pyx"
include "sendpath.pyx"
include "aiofutures.pyx"
include "transaction_manager.pyx"
