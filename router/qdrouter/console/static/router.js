// One router's page: qdstat's general, connections, links, addresses, nodes, auto-link and
// link-route tables, refreshed from /api/router?id=ID.
"use strict";

const routerId = new URLSearchParams(window.location.search).get("id") || "";
document.getElementById("router-id").textContent = routerId;
document.title = `Router ${routerId} – qdmesh console`;

function renderRouter(data, httpStatus) {
  const main = document.getElementById("tables");
  const nav = document.getElementById("views");
  if (httpStatus !== 200 || !data.tables) {
    main.replaceChildren(qd.el("p", {class: "problem"}, data.error || "This router is not in the mesh."));
    nav.replaceChildren();
    return;
  }
  if (!data.reachable) {
    main.replaceChildren(qd.el("p", {class: "problem"}, `Router ${routerId} does not answer: ${data.error}`));
    return;
  }
  if (!nav.children.length) {
    for (const table of data.tables) nav.appendChild(qd.el("a", {href: `#view-${table.view}`}, table.title));
  }
  for (const table of data.tables) {
    let section = document.getElementById(`view-${table.view}`);
    if (!section) {
      section = main.appendChild(qd.el("section", {id: `view-${table.view}`}));
      section.appendChild(qd.el("h2", {}, table.title));
      section.appendChild(qd.el("table", {"data-view": table.view}));
    }
    qd.renderTable(section.querySelector("table"), table.heads,
      table.rows.map(row => ({cells: row})), "none");
  }
}

qd.poll(`/api/router?id=${encodeURIComponent(routerId)}`, renderRouter);
