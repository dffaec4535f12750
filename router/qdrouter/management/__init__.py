"""The AMQP management agent at `$management` (AMQP Management draft, as Qpid Dispatch)."""
