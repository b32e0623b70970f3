# The compiled core: one extension module built from the included .pyx files (asyncpg/uvloop idiom).
# Rules: no I/O, no clock reads (time arrives as now_ms), no codec imports (a Compressor is passed in), no threads.
from cykafka.errors import (
    AuthenticationError,
    BatchDeliveryError,
    CorruptRecordError,
    InvalidRecordError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
    ProducerFencedError,
    RecordTooLargeError,
    SerializationError,
    TransactionAbortableError,
    TransactionFatalError,
    TransactionStateError,
    UnsupportedVersionError,
)

include "checksum.pyx"
include "clock.pyx"
include "partitioner.pyx"
include "pool.pyx"
include "lock.pyx"
include "records.pyx"
include "batchresult.pyx"
include "accumulator.pyx"
include "columns.pyx"
include "sendpath.pyx"
include "transactions.pyx"
