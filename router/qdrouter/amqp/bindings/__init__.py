"""proton-C through cffi: the ffi module, the proton shim (several proton calls per cffi call,
compiled from proton_shim.c, with a Python fallback) and its result codes."""
