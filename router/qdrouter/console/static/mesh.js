// The mesh page: topology, routers, addresses, links, auto-links and link routes, refreshed
// from /api/mesh.
"use strict";

function routerLink(id) {
  return qd.el("a", {href: `/router.html?id=${encodeURIComponent(id)}`}, id);
}

function renderMesh(data) {
  document.getElementById("entry").textContent = data.entry ? `(through router ${data.entry})` : "";
  topology.draw(document.getElementById("topology"), data);
  const routers = data.routers || [];
  qd.renderTable(document.getElementById("routers-table"),
    ["router", "state", "mode", "connections", "links", "addresses", "memory", "uptime (s)"],
    routers.map(r => ({
      attrs: {"data-router": r.id, class: r.reachable ? "" : "problem"},
      cells: [routerLink(r.id), r.reachable ? "answering" : `not answering: ${r.error}`, r.mode,
              r.connections, r.links, r.addresses, qd.bytes(r.memory), r.uptime],
    })), "no routers found yet");
  qd.renderTable(document.getElementById("edges-table"), ["router", "router", "cost"],
    (data.edges || []).map(e => ({attrs: {"data-a": e.a, "data-b": e.b}, cells: [e.a, e.b, e.cost]})),
    "no inter-router links");
  qd.renderTable(document.getElementById("addresses-table"),
    ["address", "phase", "distribution", "consumers", "on routers", "in", "in rate", "out", "out rate"],
    (data.addresses || []).map(a => ({
      attrs: {"data-address": a.address},
      cells: [a.address, a.phase, a.distribution, a.consumers, a.routers, a.ingress, qd.rate(a.ingressRate),
              a.egress, qd.rate(a.egressRate)],
    })), "no mobile addresses");
  qd.renderTable(document.getElementById("links-table"),
    ["router", "link", "dir", "address", "container", "deliveries", "rate", "undelivered", "unsettled"],
    (data.links || []).map(l => ({
      attrs: {"data-router": l.router, "data-address": l.address || ""},
      cells: [routerLink(l.router), l.id, l.dir, l.address, l.container, l.deliveries, qd.rate(l.rate),
              l.undelivered, l.unsettled],
    })), "no client links");
  renderConfigured("autolinks-table", data.autolinks || [], "no auto-links");
  renderConfigured("linkroutes-table", data.linkroutes || [], "no link routes");
}

function renderConfigured(tableId, rows, emptyText) {
  const heads = rows.length ? Object.keys(rows[0]) : ["router"];
  qd.renderTable(document.getElementById(tableId), heads,
    rows.map(row => ({attrs: {"data-router": row.router, "data-status": row.status || ""},
                      cells: heads.map((head, i) => i === 0 ? routerLink(row[head]) : row[head])})),
    emptyText);
}

qd.poll("/api/mesh", renderMesh);
