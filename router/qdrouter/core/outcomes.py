"""Delivery outcomes, numbered by their AMQP 1.0 descriptor codes (as proton numbers them)."""

RECEIVED = 0x23
ACCEPTED = 0x24
REJECTED = 0x25
RELEASED = 0x26
MODIFIED = 0x27

TERMINAL = (ACCEPTED, REJECTED, RELEASED, MODIFIED)
