"""qdmesh's telemetry pipeline: collect management snapshots of a mesh, analyse them on Spark."""
