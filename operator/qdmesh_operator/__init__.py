"""qdmesh's Kubernetes operator: reconciles RouterMesh, LinkRoute, AutoLink and VhostPolicy."""
