"""Builds the proton shim (proton_shim.c) as the cffi module ``qdrouter.amqp._proton_shim``.

setup.py builds it with the package; where that was not possible (no C compiler or no
Python headers) the router runs on the shim's pure-Python fallback, 20-30% slower.
``python router/qdrouter/amqp/bindings/proton_shim_build.py [DIR]`` builds it for the running
interpreter into DIR/qdrouter/amqp (default: next to this file, for a source checkout run
through PYTHONPATH, as the PyPy tests and benchmarks do).

Only cffi is imported here: setup.py loads this file before anything is installed."""

from __future__ import annotations

import os
import runpy
import shutil
import sys
import tempfile

import cffi

_HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = "qdrouter.amqp.bindings._proton_shim"

# Proton objects are void pointers here: cffi passes them to and from cproton_ffi's typed
# functions unchanged, and compares and hashes pointers by address whatever their type.
CDEF = """
int qd_shim_init(const char *path, int delivery_type, int transport_type);
int qd_collect(void *collector, void **held, int held_count, int *kinds, void **objects,
               intptr_t *links, int max);
int64_t qd_take(void *link, void *delivery, char *buffer, size_t capacity);
void *qd_send(void *link, uint64_t tag, const char *payload, size_t size);
intptr_t qd_send_keyed(void *link, uint64_t tag, const char *payload, size_t size);
void qd_send_settled(void *link, const char *payload, size_t size);
void *qd_current(void *link, intptr_t *key);
int qd_link_waiting(void *link, int on);
uint64_t qd_consumer_update(void *delivery, uint64_t accepted);
void qd_finish(void *delivery, uint64_t outcome);
int qd_read(void *transport, int fd, size_t budget);
int qd_write(void *transport, int fd);
"""


def _source() -> str:
    codes = runpy.run_path(os.path.join(_HERE, "proton_shim_codes.py"))
    defines = "".join(
        f"#define {name} ({value}{'ULL' if value > 0 else ''})\n"
        for name, value in codes.items() if name.startswith("QD_")
    )
    with open(os.path.join(_HERE, "proton_shim.c"), encoding="utf-8") as source:
        return defines + source.read()


def builder() -> cffi.FFI:
    ffibuilder = cffi.FFI()
    ffibuilder.cdef(CDEF)
    ffibuilder.set_source(MODULE, _source(), libraries=["dl"], extra_compile_args=["-O2"])
    return ffibuilder


def main(argv: list[str]) -> int:
    target = os.path.abspath(argv[0]) if argv else os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
    with tempfile.TemporaryDirectory() as scratch:
        built = builder().compile(tmpdir=scratch)
        destination = os.path.join(target, "qdrouter", "amqp", "bindings", os.path.basename(built))
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.move(built, destination)
    print(destination)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
