"""Inter-router TLS the operator manages itself (spec.interRouter.tls.mode Managed): a CA and
the routers' certificate per RouterMesh (certs), kept in Secrets it owns (secrets)."""
