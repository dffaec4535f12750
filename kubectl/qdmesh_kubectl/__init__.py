"""kubectl-qdstat: qdstat views of the routers of a RouterMesh, through port-forwards."""
