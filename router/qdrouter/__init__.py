"""qdmesh's router: a qdrouterd-compatible AMQP 1.0 message router."""

__version__ = "0.1.0"
