// Shared helpers of the console pages: DOM building (text only, never HTML from data),
// tables, and polling the console's JSON API.
"use strict";

const qd = {
  el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) node.setAttribute(name, String(value));
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  },

  svg(tag, attrs, text) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  },

  cell(value) {
    if (value === null || value === undefined || value === "") return "–";
    if (Array.isArray(value)) return value.join(", ");
    return String(value);
  },

  rate(value) {
    return value ? `${Number(value).toFixed(1)}/s` : "0/s";
  },

  bytes(value) {
    if (!value) return "–";
    return `${(value / (1024 * 1024)).toFixed(1)} MiB`;
  },

  // rows: [{key, cells: [string | Node], attrs?}]; the table keeps its caption.
  renderTable(table, heads, rows, emptyText) {
    const caption = table.querySelector("caption");
    table.replaceChildren();
    if (caption) table.appendChild(caption);
    const headRow = qd.el("tr");
    for (const head of heads) headRow.appendChild(qd.el("th", {scope: "col"}, head));
    table.appendChild(qd.el("thead")).appendChild(headRow);
    const body = table.appendChild(qd.el("tbody"));
    if (!rows.length) {
      body.appendChild(qd.el("tr", {class: "empty"})).appendChild(
        qd.el("td", {colspan: heads.length}, emptyText || "none"));
      return;
    }
    for (const row of rows) {
      const tr = body.appendChild(qd.el("tr", row.attrs || {}));
      row.cells.forEach((value, index) => {
        const td = qd.el(index === 0 ? "th" : "td", index === 0 ? {scope: "row"} : {});
        if (value instanceof Node) td.appendChild(value); else td.textContent = qd.cell(value);
        tr.appendChild(td);
      });
    }
  },

  // Fetch url now and every `interval` seconds the API asks for; render(data) each time.
  poll(url, render) {
    const status = document.getElementById("status");
    let interval = 2;
    const tick = async () => {
      try {
        const reply = await fetch(url, {cache: "no-store"});
        const data = await reply.json();
        interval = data.interval || interval;
        render(data, reply.status);
        if (data.error) {
          status.textContent = data.error;
          status.className = "status problem";
        } else {
          const when = data.updated ? new Date(data.updated * 1000).toLocaleTimeString() : "–";
          status.textContent = `Updated ${when}; refreshed every ${interval} s.`;
          status.className = "status";
        }
      } catch (error) {
        status.textContent = `The console server does not answer (${error.message}); retrying.`;
        status.className = "status problem";
      }
      setTimeout(tick, interval * 1000);
    };
    tick();
  },
};
