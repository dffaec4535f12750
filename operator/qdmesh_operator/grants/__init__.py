"""The accepting side of linking meshes across clusters (docs/multicluster.md): MeshAccessGrant
reconciliation, the token and client CA Secrets, the link listener's Secrets, the HTTPS
redemption server the leader runs, and revocation.  Modules are imported where used (the kopf
handlers in grants/handlers.py)."""
