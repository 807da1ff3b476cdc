// The tables list: every table with its types, sizes, segment count and status, and the
// schemas; plus the Add Schema / Add Offline Table / Add Realtime Table forms.
import { api } from "./api.js";
import { el, clear, $, formatBytes, badge, errorText, simpleTable, showDialog, pageReady } from "./ui.js";
import { jsonEditor } from "./jsonedit.js";
import { tableSummary } from "./tablestate.js";
import { openAddDialog } from "./forms.js";

async function loadTables() {
  const host = $("#tables");
  try {
    const { tables = [] } = await api.get("/tables");
    const results = await Promise.allSettled(tables.sort().map(tableSummary));
    const rows = results.map((r, i) => (r.status === "fulfilled" ? r.value : { table: tables[i], error: errorText(r.reason) }));
    $("#tile-tables").textContent = String(tables.length);
    $("#tile-segments").textContent = String(rows.reduce((n, r) => n + (r.rows ? r.rows.length : 0), 0));
    clear(host, simpleTable([
      { label: "Table", render: (r) => el("a", { href: `/console/tables/${encodeURIComponent(r.table)}`, class: "table-name" }, r.table) },
      { label: "Type", render: (r) => (r.types || []).map((t) => badge(t, "tag")) },
      { label: "Reported size", class: "num", render: (r) => formatBytes(r.size && r.size.reportedSizeInBytes) },
      { label: "Estimated size", class: "num", render: (r) => formatBytes(r.size && r.size.estimatedSizeInBytes) },
      { label: "Segments", class: "num", render: (r) => (r.rows ? String(r.rows.length) : "–") },
      { label: "Status", render: (r) => (r.error ? el("span", { class: "error-text" }, r.error) : badge(r.status)) },
    ], rows, { empty: "No tables yet. Add a schema, then an offline or realtime table.", testid: "tables-table" }));
  } catch (err) {
    clear(host, el("p", { class: "error-text" }, `Could not list tables: ${errorText(err)}`));
  }
}

async function loadSchemas() {
  const host = $("#schemas");
  try {
    const names = (await api.get("/schemas")) || [];
    $("#tile-schemas").textContent = String(names.length);
    clear(host, names.length ? el("div", { class: "chips" }, names.sort().map((n) =>
      el("button", { type: "button", class: "btn btn-small", onclick: () => showSchema(n) }, n))) : el("p", { class: "empty" }, "No schemas yet."));
  } catch (err) {
    clear(host, el("p", { class: "error-text" }, `Could not list schemas: ${errorText(err)}`));
  }
}

async function showSchema(name) {
  const box = el("div", { class: "json-box" });
  showDialog(`Schema ${name}`, box);
  try {
    jsonEditor(box, await api.get(`/schemas/${encodeURIComponent(name)}`), { readOnly: true });
  } catch (err) {
    box.append(el("p", { class: "error-text" }, errorText(err)));
  }
}

function reload() {
  loadTables();
  loadSchemas();
}

$("#add-schema").addEventListener("click", () => openAddDialog("schema", reload));
$("#add-offline").addEventListener("click", () => openAddDialog("OFFLINE", reload));
$("#add-realtime").addEventListener("click", () => openAddDialog("REALTIME", reload));
reload();
pageReady();
