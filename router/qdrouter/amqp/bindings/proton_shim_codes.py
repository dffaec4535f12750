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
# qd_take: added to a message's size when it starts without a message-annotations section.
QD_NO_ANNOTATIONS = 1 << 32
# qd_take: added to a message's size when its producer had settled it: it is settled here
# too (whole, read and advanced past; the batch's event keeps it valid until the next).
QD_TAKEN_SETTLED = 1 << 33
# qd_collect: the event kind of a delivery event on a receiving link (proton's event types
# are not negative).
QD_INCOMING_DELIVERY = -100
# qd_consumer_update: added to the outcome when the consumer settled.
QD_SETTLED = 1 << 32
# qd_read and qd_write: the socket is still open (for qd_write: all pending output went).
QD_IO_OPEN = 0
# qd_read: the socket's input is over (or the transport takes no more); its tail is closed.
QD_INPUT_OVER = -1
# qd_write: the socket pushed back; output is left pending.
QD_WOULD_BLOCK = 1
# qd_write: sending failed; the transport is closed both ways.
QD_OUTPUT_FAILED = -2
