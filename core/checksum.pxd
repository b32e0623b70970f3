# checksum.pxd: what checksum.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

from libc.stdint cimport uint32_t

# the C implementation (crc32c.h): SSE4.2 when the CPU has it, slice-by-8 tables otherwise
cdef extern from "crc32c.h":
    uint32_t cyk_crc32c(uint32_t crc, const unsigned char *p, size_t n, int force) nogil
    int cyk_crc32c_hardware() nogil
