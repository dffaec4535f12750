"""Linking meshes across clusters: the wire format both operators speak (wire.py)."""
