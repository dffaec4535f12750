"""Applying: the only modules that talk to routers (AMQP management) and to Kubernetes."""
