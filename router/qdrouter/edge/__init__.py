"""Edge routers, as qdrouterd 1.19 makes them (src/router_core/modules/edge_router/ and
friends), wire-compatible with it.

An edge router (``router { mode: edge }``) keeps one active connection to an interior router
(connector ``role: edge``) and takes no part in the routing protocol. Over that connection:
- an anonymous sending link (the uplink): what no address here takes goes up it;
- a receiving link with the capability ``qd.router-edge-downlink`` and source address the
  edge's id: the interior sends it what is addressed to ``_edge/<edge id>/...``;
- a receiving link from ``_$qd.edge_addr_tracking``: the interior says, per address the edge
  produces to, whether it has a consumer anywhere else ([hash key, bool] bodies);
- one receiving link per address with local consumers, one sending link per address with
  local producers (the address proxy), the sending one bound as a consumer only while the
  interior says the address has a consumer elsewhere.

``uplink.py`` and ``address_proxy.py`` are the edge router's side, ``hub.py`` and
``lookup_server.py`` the interior router's, ``terms.py`` what both sides say on the wire.
"""
