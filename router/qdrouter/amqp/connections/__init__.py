"""One AMQP connection each: socket and transport, SASL and TLS (with reloads and rotation), open
properties, listener settings, and outgoing connectors with their fail-over and address
resolution."""
