"""`qdmesh console`: a read-only web console of a mesh, read through management."""
