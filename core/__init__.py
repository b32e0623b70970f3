"""cykafka.core: the sans-I/O producer domain, compiled (see _core.pyx). Everything public is re-exported here."""

from cykafka.core import _core
from cykafka.core._core import crc32c, crc32c_hardware

__all__ = ["_core", "crc32c", "crc32c_hardware"]
