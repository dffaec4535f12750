"""HTTP on the router's listeners with `http: true`: health checks and Prometheus metrics."""
