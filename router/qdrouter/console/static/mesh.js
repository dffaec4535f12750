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
    ["router", "state", "mode", "connections", "links", "addresses", "memory", "uptime (s)", "routes active"],
    routers.map(r => ({
      attrs: {"data-router": r.id, class: r.reachable ? "" : "problem"},
      cells: [routerLink(r.id), r.reachable ? "answering" : `not answering: ${r.error}`, r.mode,
              r.connections, r.links, r.addresses, qd.bytes(r.memory), r.uptime, routesActive(r)],
    })), "no routers found yet");
  qd.renderTable(document.getElementById("edges-table"), ["router", "router", "cost", "round trip"],
    (data.edges || []).map(e => {
      const latency = topology.latency(e);
      return {attrs: {"data-a": e.a, "data-b": e.b, class: `latency-${latency.level}`},
              cells: [e.a, e.b, e.cost, latency.ms === null ? latency.text : latency.text.replace("round trip ", "")]};
    }), "no inter-router links");
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

// "2 of 3" auto-links and link routes together, with what is not active.
function routesActive(router) {
  const all = [router.autoLinks, router.linkRoutes].filter(c => c && c.total);
  if (!all.length) return "";
  const active = all.reduce((sum, c) => sum + c.active, 0), total = all.reduce((sum, c) => sum + c.total, 0);
  const inactive = router.inactiveRoutes || [];
  return inactive.length ? `${active} of ${total} (${inactive.join("; ")})` : `${active} of ${total}`;
}

function renderConfigured(tableId, rows, emptyText) {
  const heads = rows.length ? Object.keys(rows[0]) : ["router"];
  qd.renderTable(document.getElementById(tableId), heads,
    rows.map(row => ({attrs: {"data-router": row.router, "data-status": row.status || ""},
                      cells: heads.map((head, i) => i === 0 ? routerLink(row[head]) : row[head])})),
    emptyText);
}

qd.poll("/api/mesh", renderMesh);
