"""Build: maps the top-level source dirs onto one import name and compiles the Cython core.

The folders are the layers, innermost first: errors/ -> cykafka.errors (a leaf), protocol/ -> cykafka.protocol (on
the errors), core/ -> cykafka.core (one extension, core/_core.pyx, which `include`s the other .pyx files: the
asyncpg/uvloop idiom that keeps cdef classes in one module, so no cross-module cimport; each included .pyx has its
.pxd beside it, included by the module's own, core/pxd/cykafka/core/_core.pxd, on the Cython include path),
ports/ -> cykafka.ports, adapters/ -> cykafka.adapters, and cykafka/ itself (the public API and the composition
roots). Only the one import name `cykafka` lands in site-packages. Generated C goes to build/, never into
the wheel.
cythonize() hands setuptools that generated C as the extension's source, so the .pyx/.h files the sdist must carry to
build anywhere are listed in MANIFEST.in (without them: "'core/_core.pyx' doesn't match any files").
"""

import os

from Cython.Build import cythonize
from setuptools import Extension, setup

PACKAGES = {
    "cykafka": "cykafka",
    "cykafka.requests": "cykafka/requests",
    "cykafka.spark": "cykafka/spark",
    "cykafka.metrics": "cykafka/metrics",
    "cykafka.instrumentation": "cykafka/instrumentation",
    "cykafka.compat": "cykafka/compat",
    "cykafka.compat.kafka": "cykafka/compat/kafka",
    "cykafka.compat.aiokafka": "cykafka/compat/aiokafka",
    "cykafka.compat.confluent_kafka": "cykafka/compat/confluent_kafka",
    "cykafka.errors": "errors",
    "cykafka.protocol": "protocol",
    "cykafka.core": "core",
    "cykafka.ports": "ports",
    "cykafka.adapters": "adapters",
}

extension = Extension(
    "cykafka.core._core",
    sources=["core/_core.pyx"],
    include_dirs=["core"],
    extra_compile_args=["-O3", "-fno-strict-aliasing"],
)

setup(
    packages=list(PACKAGES),
    package_dir=PACKAGES,
    package_data={"cykafka": ["py.typed"], "cykafka.core": ["py.typed", "*.pyi"]},
    exclude_package_data={"": ["*.c", "*.h", "*.pyx", "*.pxd", "*.pxi", "*.html"]},
    ext_modules=cythonize(
        [extension],
        build_dir="build/cython",
        # the module's declarations, core/pxd/cykafka/core/_core.pxd (found by its qualified name in this package
        # layout), and the .pxd of each included .pyx it includes from core/
        include_path=[".", "core", "core/pxd"],
        annotate=bool(os.environ.get("CYKAFKA_ANNOTATE")),
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
            "embedsignature": True,
            # signatures for inspect/help()/stubtest: def methods are cyfunctions (binding, Cython 3's default: it
            # changes nothing for cdef/cpdef calls from C), their signature from the code, their doc left clean
            "binding": True,
            "embedsignature.format": "clinic",
            "annotation_typing": False,  # annotations in core/*.pyx document the Python API; C types are cdef'd
            "autotestdict": False,  # no module __test__ dict (no doctests in the core)
        },
    ),
    zip_safe=False,
)
