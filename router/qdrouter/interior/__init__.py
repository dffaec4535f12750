"""Interior routers (`mode: interior`), the peer of edge/: the routing protocol (protocol/)
wired to the router's inter-router links (amqp/) and forwarding (core/) in mesh_node.py."""

from .mesh_node import MeshNode

__all__ = ["MeshNode"]
