# The declarations of the compiled core, cykafka.core._core: one module built from core/_core.pyx, which `include`s
# the other .pyx files (the asyncpg/uvloop idiom). Each included <name>.pyx has its <name>.pxd beside it, declaring
# its cdef classes' fields and C methods and the structs and constants they pass (asyncpg's protocol.pxd including
# coreproto.pxd); this file includes them in _core.pyx's order, as one module's .pxd.
# Why here: Cython finds a module's own .pxd by its qualified name, and core/ is installed as cykafka.core through
# setup.py's package_dir, which Cython does not see; this directory is on the Cython include path (setup.py) in the
# package layout Cython looks for (cykafka/core/_core.pxd). Decision: docs/architecture.md, "The .pxd contracts".
include "checksum.pxd"
include "clock.pxd"
include "netio.pxd"
include "partitioner.pxd"
include "pool.pxd"
include "lock.pxd"
include "records.pxd"
include "arrow.pxd"
include "fetch.pxd"
include "fetch_pump.pxd"
include "peer_records.pxd"
include "refs.pxd"
include "batchresult.pxd"
include "accumulator.pxd"
include "columns.pxd"
include "trace_gate.pxd"
include "sendpath.pxd"
include "aiofutures.pxd"
include "transaction_manager.pxd"
