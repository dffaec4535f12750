"""The proton shim's result codes, shared by its C source (proton_shim_build.py writes them
in as #defines) and its pure-Python fallback (proton_shim.py). No imports: setup.py reads
this file before anything is installed."""

# qd_take: the message is not complete yet.
QD_PARTIAL = -1
# qd_take: nothing buffered for the delivery.
QD_EMPTY = -2
# qd_take: the message is larger than the caller's buffer; nothing was read.
QD_LARGE = -3
# qd_take: the producer aborted the message; it was read past and settled.
QD_ABORTED = -4
# qd_collect: the event kind of a delivery event on a receiving link (proton's event types
# are not negative).
QD_INCOMING_DELIVERY = -100
# qd_consumer_update: added to the outcome when the consumer settled.
QD_SETTLED = 1 << 32
