// The topology graph: routers on a circle, inter-router links with their cost, and each
// router's brokers and clients around it. Pure SVG built with DOM calls.
"use strict";

const topology = {
  width: 900,
  height: 560,

  draw(svg, data) {
    for (const old of svg.querySelectorAll("g.graph")) old.remove();
    const graph = svg.appendChild(qd.svg("g", {class: "graph"}));
    const routers = data.routers || [];
    const cx = this.width / 2, cy = this.height / 2;
    const radius = routers.length > 1 ? Math.min(cx, cy) - 110 : 0;
    const places = {};
    routers.forEach((router, index) => {
      const angle = (2 * Math.PI * index) / Math.max(routers.length, 1) - Math.PI / 2;
      places[router.id] = {x: cx + radius * Math.cos(angle), y: cy + radius * Math.sin(angle), angle};
    });
    const edges = graph.appendChild(qd.svg("g", {class: "edges"}));
    for (const edge of data.edges || []) {
      const a = places[edge.a], b = places[edge.b];
      if (!a || !b) continue;
      const latency = this.latency(edge);
      const group = edges.appendChild(qd.svg("g", {
        class: `edge latency-${latency.level}`, "data-a": edge.a, "data-b": edge.b,
        "data-latency-ms": latency.ms === null ? "" : latency.ms.toFixed(3)}));
      group.appendChild(qd.svg("line", {x1: a.x, y1: a.y, x2: b.x, y2: b.y}));
      group.appendChild(qd.svg("title", {}, `${edge.a} – ${edge.b}, cost ${edge.cost ?? "unknown"}, ${latency.text}`));
      const cost = edge.cost === null || edge.cost === undefined ? "?" : edge.cost;
      const label = latency.ms === null ? `${cost}` : `${cost} · ${this.milliseconds(latency.ms)}`;
      group.appendChild(qd.svg("text", {x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 6, class: "cost"}, label));
    }
    this.attachments(graph, data.attachments || [], places, cx, cy);
    const nodes = graph.appendChild(qd.svg("g", {class: "routers"}));
    for (const router of routers) {
      const place = places[router.id];
      const link = nodes.appendChild(qd.svg("a", {href: `/router.html?id=${encodeURIComponent(router.id)}`}));
      const group = link.appendChild(qd.svg("g", {
        class: router.reachable ? "router" : "router unreachable", "data-router": router.id}));
      group.appendChild(qd.svg("title", {}, router.reachable
        ? `Router ${router.id}: ${router.connections} connections, ${router.addresses} addresses`
        : `Router ${router.id} does not answer: ${router.error}`));
      group.appendChild(qd.svg("circle", {cx: place.x, cy: place.y, r: 30}));
      group.appendChild(qd.svg("text", {x: place.x, y: place.y + 5, class: "router-label"}, router.id));
      this.readiness(group, router, place);
    }
  },

  // The round trip measured across a link (routers' canaryIntervalSeconds): green under
  // 10 ms, amber under 100 ms, red above or when probes go unanswered, grey when unknown.
  latency(edge) {
    const failures = edge.probeFailures || 0;
    const ms = typeof edge.roundTrip === "number" ? edge.roundTrip * 1000 : null;
    if (failures > 0) {
      return {level: "bad", ms, text: `${failures} round-trip probe(s) unanswered in a row`};
    }
    if (ms === null) return {level: "unknown", ms, text: "round trip not measured"};
    const level = ms < 10 ? "good" : ms < 100 ? "slow" : "bad";
    return {level, ms, text: `round trip ${this.milliseconds(ms)}`};
  },

  milliseconds(ms) {
    return ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
  },

  // A ring and a badge on a router whose auto-links or link routes are not all active.
  readiness(group, router, place) {
    const inactive = router.inactiveRoutes || [];
    if (!router.reachable || !inactive.length) return;
    group.setAttribute("class", group.getAttribute("class") + " routes-not-ready");
    const counts = [["auto-links", router.autoLinks], ["link routes", router.linkRoutes]]
      .filter(([, c]) => c && c.total).map(([what, c]) => `${c.active} of ${c.total} ${what} active`);
    const title = `${counts.join(", ")}; not active: ${inactive.join("; ")}`;
    const ring = qd.svg("circle", {cx: place.x, cy: place.y, r: 36, class: "readiness-ring"});
    ring.appendChild(qd.svg("title", {}, title));
    group.insertBefore(ring, group.firstChild.nextSibling);
    const badge = group.appendChild(qd.svg("g", {class: "readiness-badge"}));
    badge.appendChild(qd.svg("title", {}, title));
    badge.appendChild(qd.svg("circle", {cx: place.x + 24, cy: place.y - 24, r: 10}));
    badge.appendChild(qd.svg("text", {x: place.x + 24, y: place.y - 20}, "!"));
  },

  attachments(graph, attachments, places, cx, cy) {
    const layer = graph.appendChild(qd.svg("g", {class: "attachments"}));
    const byRouter = {};
    for (const item of attachments) (byRouter[item.router] = byRouter[item.router] || []).push(item);
    for (const [routerId, items] of Object.entries(byRouter)) {
      const place = places[routerId];
      if (!place) continue;
      // Fan the router's attachments out, away from the centre of the mesh.
      const outward = place.x === cx && place.y === cy ? Math.PI / 2 : Math.atan2(place.y - cy, place.x - cx);
      items.forEach((item, index) => {
        const spread = items.length > 1 ? (index / (items.length - 1) - 0.5) * Math.min(2.4, 0.8 * items.length) : 0;
        const angle = outward + spread;
        const reach = 80 + 22 * (index % 2);  // alternate distances keep neighbouring labels apart
        const x = place.x + reach * Math.cos(angle), y = place.y + reach * Math.sin(angle);
        const group = layer.appendChild(qd.svg("g", {
          class: `attachment ${item.kind}`, "data-router": routerId, "data-name": item.name}));
        const what = {container: "Broker / route container", edge: "Edge router"}[item.kind] || "Client";
        group.appendChild(qd.svg("title", {}, `${what} ` +
          `${item.name}${item.host ? " from " + item.host : ""} on ${routerId}`));
        group.appendChild(qd.svg("line", {x1: place.x, y1: place.y, x2: x, y2: y}));
        if (item.kind === "container") {
          group.appendChild(qd.svg("rect", {x: x - 12, y: y - 12, width: 24, height: 24}));
        } else if (item.kind === "edge") {
          group.appendChild(qd.svg("polygon", {points: `${x},${y - 13} ${x + 13},${y} ${x},${y + 13} ${x - 13},${y}`}));
        } else {
          group.appendChild(qd.svg("circle", {cx: x, cy: y, r: 9}));
        }
        const name = item.name.length > 18 ? item.name.slice(0, 17) + "…" : item.name;
        group.appendChild(qd.svg("text", {x, y: y + 26, class: "attachment-label"}, name));
      });
    }
  },
};
