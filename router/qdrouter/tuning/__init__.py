"""How the router process is tuned to its interpreter and host, none of it routing: CPython's
collector and the start-up objects (startup_gc.py), PyPy's nursery (pypy_gc.py) and JIT traces
(pypy_jit.py), the open-files limit (open_files.py), and the event loop's off-by-default trace
for latency work (loop_trace.py)."""
