# CRC32C over any buffer, without copying it: SSE4.2 when the CPU has it, slice-by-8 tables otherwise (crc32c.h).

from libc.stdint cimport uint32_t


def crc32c(const unsigned char[::1] data not None, uint32_t crc=0, int force=-1):
    """CRC32C of `data` continuing from `crc`; `force` 0 = software, 1 = hardware if present, -1 = best."""
    if data.shape[0] == 0:
        return crc
    return cyk_crc32c(crc, &data[0], data.shape[0], force)


def crc32c_hardware():
    """True when the SSE4.2 path is in use."""
    return cyk_crc32c_hardware() == 1
