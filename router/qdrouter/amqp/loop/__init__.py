"""The event loop (server.py) and what it does to connections as a whole: listening sockets and
connects, a failure contained to its connection (fault_boundary.py), connections let go
(connection_release.py), the loop's stop and a graceful drain's steps."""
