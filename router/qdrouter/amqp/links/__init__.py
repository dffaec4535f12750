"""Links and their attach: endpoint lifecycles, attach addresses and capabilities, inter-router
links, link routing and its streams, and policy applied to links and their messages."""
