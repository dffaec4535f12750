"""The delivery data path: messages in from producers (the fast path and the general one), out to
consumers through the send queue, outcomes and credit back, streamed messages, and producers
waiting for credit. The core's send/credit/settle API (core/sends.py) is the one place its
bookkeeping lives."""
