// One table: summary, segments (status from ideal state vs external view, per-replica state,
// metadata, reload, delete), config and schema editors, rebalance, enable/disable, delete.
import { api } from "./api.js";
import { el, clear, $, formatBytes, badge, notify, errorText, confirmDialog, showDialog, tabs, pageReady } from "./ui.js";
import { segmentRows, tableStatus } from "./tablestate.js";
import { jsonEditor } from "./jsonedit.js";

const TABLE = document.body.dataset.table;
const PATH = `/tables/${encodeURIComponent(TABLE)}`;
const SEGMENTS = `/segments/${encodeURIComponent(TABLE)}`;
let configs = {};
let rows = [];
let segmentFilter = "";
let configEditor = null;
let schemaEditor = null;
let schemaName = null;
let sizes = {};

tabs($("#table-tabs"));

function types() {
  return Object.keys(configs).filter((t) => configs[t]);
}

async function loadAll() {
  try {
    configs = await api.get(PATH);
  } catch (err) {
    clear($("#table-summary"), el("div", { class: "alert alert-error", role: "alert" }, errorText(err)));
    $("#table-body").hidden = true;
    $(".page-head .actions").hidden = true;
    return;
  }
  await Promise.all([loadSegments(), loadState(), loadConfig(), loadSchema(), loadWarnings()]);
}

// What the controller accepted but Sprig does not act on (warnings) or does not know
// (unrecognizedProperties), from the same validation the API runs on every config.
async function loadWarnings() {
  const host = $("#config-warnings");
  const items = [];
  for (const type of types()) {
    let out;
    try {
      out = await api.post("/tables/validate", configs[type]);
    } catch (err) {
      items.push(el("li", { class: "error-text" }, `${type}: ${errorText(err)}`));
      continue;
    }
    for (const w of out.warnings || []) {
      items.push(el("li", {}, el("code", {}, `${type} · ${w.field}`), ` — ${w.message}`));
    }
    for (const key of Object.keys(out.unrecognizedProperties || {})) {
      items.push(el("li", {}, el("code", {}, `${type} · ${key}`), " — not a Pinot config key; kept as given"));
    }
  }
  host.hidden = items.length === 0;
  clear(host, el("h2", {}, "Accepted, not implemented in Sprig"), el("ul", { class: "warning-list" }, items));
}

async function loadState() {
  const host = $("#table-state");
  clear(host);
  for (const type of types()) {
    try {
      const state = await api.get(`${PATH}/state`, { type });
      const enabled = String(state.state || "").toLowerCase() === "enabled" || state.state === true;
      const toggle = el("input", { type: "checkbox", role: "switch", checked: enabled, "data-testid": `enable-${type}` });
      toggle.addEventListener("change", async () => {
        toggle.disabled = true;
        try {
          await api.put(`${PATH}/state`, undefined, { type, state: toggle.checked ? "enable" : "disable" });
          notify(`${TABLE}_${type} ${toggle.checked ? "enabled" : "disabled"}.`, "ok");
        } catch (err) {
          toggle.checked = !toggle.checked;
          notify(errorText(err), "error");
        } finally {
          toggle.disabled = false;
          loadSegments();
        }
      });
      host.append(el("label", { class: "field-inline switch" }, toggle, `${type} enabled`));
    } catch (err) {
      host.append(el("span", { class: "error-text" }, errorText(err)));
    }
  }
}

async function loadSegments() {
  const [ideal, view, size, instances] = await Promise.all([
    api.get(`${PATH}/idealstate`), api.get(`${PATH}/externalview`), api.get(`${PATH}/size`).catch(() => null),
    api.get(`${PATH}/instances`).catch(() => null),
  ]).catch((err) => {
    clear($("#segments"), el("p", { class: "error-text" }, errorText(err)));
    return [null, null, null, null];
  });
  if (!ideal) return;
  rows = segmentRows(ideal, view);
  sizes = {};
  for (const part of [size && size.offlineSegments, size && size.realtimeSegments]) {
    for (const [segment, info] of Object.entries((part && part.segments) || {})) sizes[segment] = info;
  }
  const count = (status) => rows.filter((r) => r.status === status).length;
  clear($("#table-summary"),
    tile("Status", badge(tableStatus(rows)), "table-status"),
    tile("Segments", String(rows.length), "segment-count"),
    tile("Good / updating / bad", `${count("GOOD")} / ${count("UPDATING")} / ${count("BAD")}`),
    tile("Reported size", formatBytes(size && size.reportedSizeInBytes)),
    tile("Estimated size", formatBytes(size && size.estimatedSizeInBytes)),
    tile("Servers", String(instanceCount(instances, "server")), "server-count"),
    tile("Brokers", String(instanceCount(instances, "brokers")), "broker-count"),
    tile("Types", types().map((t) => badge(t, "tag"))));
  renderSegments();
}

// GET /tables/{t}/instances lists instances per table type; count each instance once.
function instanceCount(instances, key) {
  if (!instances || !Array.isArray(instances[key])) return "–";
  return new Set(instances[key].flatMap((part) => part.instances || [])).size;
}

function tile(label, value, testid) {
  return el("div", { class: "tile" }, el("span", { class: "tile-label" }, label), el("span", { class: "tile-value", "data-testid": testid }, value));
}

function replicaList(row) {
  const instances = [...new Set([...Object.keys(row.ideal), ...Object.keys(row.view)])].sort();
  return el("div", { class: "replicas" }, instances.map((instance) => {
    const state = row.view[instance] || "MISSING";
    return el("div", { class: "replica", title: `ideal: ${row.ideal[instance] || "none"}, external view: ${state}` },
      badge(state, state === row.ideal[instance] ? "good" : state === "ERROR" ? "bad" : "warn"), " ", el("span", { class: "mono" }, instance));
  }));
}

function renderSegments() {
  const shown = rows.filter((r) => r.segment.toLowerCase().includes(segmentFilter.toLowerCase()));
  const table = shown.length ? el("div", { class: "table-wrap" }, el("table", { class: "data", "data-testid": "segments-table" },
    el("thead", {}, el("tr", {}, el("th", {}, "Segment"), el("th", {}, "Type"), el("th", {}, "Status"), el("th", {}, "Replicas (external view)"), el("th", { class: "num" }, "Size"), el("th", {}, ""))),
    el("tbody", {}, shown.map((row) => el("tr", { "data-segment": row.segment },
      el("td", {}, el("button", { type: "button", class: "link mono", onclick: () => showSegment(row) }, row.segment)),
      el("td", {}, row.type),
      el("td", {}, badge(row.status)),
      el("td", {}, replicaList(row)),
      el("td", { class: "num" }, formatBytes(sizes[row.segment] && sizes[row.segment].estimatedSizeInBytes / Math.max(1, Object.keys(row.ideal).length))),
      el("td", { class: "nowrap" },
        el("button", { type: "button", class: "btn btn-small", onclick: () => reloadSegment(row) }, "Reload"), " ",
        el("button", { type: "button", class: "btn btn-small btn-danger", onclick: () => deleteSegment(row) }, "Delete"))))))) :
    el("p", { class: "empty" }, rows.length ? "No segment matches the filter." : "This table has no segments yet. Push some with `sprig ingest` or POST /segments.");
  clear($("#segments"), table);
}

async function showSegment(row) {
  const box = el("div", {}, el("p", { class: "muted" }, "Loading…"));
  showDialog(`Segment ${row.segment}`, box);
  try {
    const metadata = await api.get(`${SEGMENTS}/${encodeURIComponent(row.segment)}/metadata`, { type: row.type, columns: "*" });
    const editorBox = el("div", { class: "json-box", "data-testid": "segment-metadata" });
    clear(box, el("h3", {}, "Replicas"), replicaTable(row), el("h3", {}, "Metadata"), editorBox);
    jsonEditor(editorBox, metadata, { readOnly: true });
  } catch (err) {
    clear(box, el("p", { class: "error-text" }, errorText(err)));
  }
}

function replicaTable(row) {
  const instances = [...new Set([...Object.keys(row.ideal), ...Object.keys(row.view)])].sort();
  return el("div", { class: "table-wrap" }, el("table", { class: "data compact" },
    el("thead", {}, el("tr", {}, el("th", {}, "Server"), el("th", {}, "Ideal state"), el("th", {}, "External view"))),
    el("tbody", {}, instances.map((i) => el("tr", {}, el("td", { class: "mono" }, i),
      el("td", {}, row.ideal[i] || "–"), el("td", {}, badge(row.view[i] || "MISSING", row.view[i] === row.ideal[i] ? "good" : "warn")))))));
}

// Pinot answers a reload with {"status": "<JSON text: {tableNameWithType: {reloadJobId, ...}}>"}.
function reloadJobIds(out) {
  let status = out && out.status;
  if (typeof status === "string") {
    try {
      status = JSON.parse(status);
    } catch {
      return [];
    }
  }
  return Object.values(status || {}).map((v) => v && v.reloadJobId).filter(Boolean);
}

async function followReload(jobId, what) {
  const line = el("div", { class: "reload-line", "data-testid": "reload-status" }, `Reload of ${what}: sent (job ${jobId})`);
  $("#reload-status").prepend(line);
  for (let i = 0; i < 120 && line.isConnected; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    try {
      const status = await api.get(`/segments/segmentReloadStatus/${encodeURIComponent(jobId)}`);
      line.textContent = `Reload of ${what}: ${status.successCount} of ${status.totalSegmentCount} segments reloaded` +
        (status.pendingCount ? `, ${status.pendingCount} pending` : "") + ` (job ${jobId})`;
      if (!status.pendingCount) return;
    } catch (err) {
      line.textContent = `Reload of ${what}: ${errorText(err)} (job ${jobId})`;
      return;
    }
  }
}

async function reloadSegment(row) {
  try {
    const out = await api.post(`${SEGMENTS}/${encodeURIComponent(row.segment)}/reload`, undefined, { type: row.type });
    const jobs = reloadJobIds(out);
    if (jobs.length) jobs.forEach((job) => followReload(job, row.segment));
    else notify(`Reload of ${row.segment} sent.`, "ok");
  } catch (err) {
    notify(errorText(err), "error");
  }
}

async function deleteSegment(row) {
  if (!(await confirmDialog("Delete segment", `Delete ${row.segment} from ${TABLE}_${row.type}? Servers drop it and the deep store keeps a copy under Deleted_Segments for the retention period.`, { confirmLabel: "Delete", danger: true }))) return;
  try {
    await api.del(`${SEGMENTS}/${encodeURIComponent(row.segment)}`, { type: row.type });
    notify(`Segment ${row.segment} deleted.`, "ok");
  } catch (err) {
    notify(errorText(err), "error");
  }
  await loadSegments();
}

async function reloadAll() {
  for (const type of types()) {
    try {
      const out = await api.post(`${SEGMENTS}/reload`, undefined, { type });
      const jobs = reloadJobIds(out);
      if (jobs.length) jobs.forEach((job) => followReload(job, `all ${type} segments`));
      else notify(`Reload of all ${type} segments sent.`, "ok");
    } catch (err) {
      notify(errorText(err), "error");
    }
  }
}

async function deleteAll() {
  if (!(await confirmDialog("Delete all segments", `Delete every segment of ${TABLE} (${types().join(", ")})? The table and its config stay.`, { confirmLabel: "Delete all", danger: true }))) return;
  for (const type of types()) {
    try {
      await api.del(SEGMENTS, { type });
      notify(`All ${type} segments of ${TABLE} deleted.`, "ok");
    } catch (err) {
      notify(errorText(err), "error");
    }
  }
  await loadSegments();
}

async function deleteTable() {
  const dropSchema = el("input", { type: "checkbox" });
  const extra = el("label", { class: "field-inline" }, dropSchema, ` Also delete the schema ${schemaName || ""}`);
  const ok = await confirmDialog("Delete table", `Delete ${TABLE} (${types().join(", ")}) with all its segments? This cannot be undone.`, { confirmLabel: "Delete table", danger: true, extra });
  if (!ok) return;
  try {
    await api.del(PATH);
    if (dropSchema.checked && schemaName) await api.del(`/schemas/${encodeURIComponent(schemaName)}`);
    window.location.href = "/console/tables";
  } catch (err) {
    notify(errorText(err), "error");
  }
}

async function loadConfig() {
  const type = $("#config-type").value || types()[0];
  const select = $("#config-type");
  if (!select.options.length) for (const t of types()) select.append(el("option", { value: t }, t));
  if (!configEditor) configEditor = jsonEditor($("#config-editor"), configs[type] || {});
  else configEditor.set(configs[select.value] || {});
}

async function saveConfig() {
  const feedback = $("#config-feedback");
  try {
    const doc = configEditor.parse();
    await api.post("/tables/validate", doc);
    await api.put(PATH, doc);
    configs = await api.get(PATH);
    setFeedback(feedback, "Saved: the controller accepted the config.", true);
    loadWarnings();
  } catch (err) {
    setFeedback(feedback, errorText(err), false);
  }
}

async function loadSchema() {
  try {
    const schema = await api.get(`${PATH}/schema`);
    schemaName = schema.schemaName;
    if (!schemaEditor) schemaEditor = jsonEditor($("#schema-editor"), schema);
    else schemaEditor.set(schema);
  } catch (err) {
    clear($("#schema-editor"), el("p", { class: "error-text" }, errorText(err)));
  }
}

async function saveSchema() {
  const feedback = $("#schema-feedback");
  try {
    const doc = schemaEditor.parse();
    await api.post("/schemas/validate", doc);
    await api.put(`/schemas/${encodeURIComponent(doc.schemaName || schemaName)}`, doc, { reload: $("#schema-reload").checked ? "true" : undefined });
    setFeedback(feedback, "Saved: the controller accepted the schema.", true);
  } catch (err) {
    setFeedback(feedback, errorText(err), false);
  }
}

async function validateDoc(editor, path, feedback) {
  try {
    const out = await api.post(path, editor.parse());
    const notes = (out.warnings || []).map((w) => `${w.field}: ${w.message}`);
    notes.push(...Object.keys(out.unrecognizedProperties || {}).map((k) => `${k}: unknown key, kept`));
    setFeedback(feedback, notes.length ? `Valid, with notes:\n${notes.join("\n")}` : "Valid.", true);
  } catch (err) {
    setFeedback(feedback, errorText(err), false);
  }
}

function setFeedback(node, text, ok) {
  node.className = `validation ${ok ? "ok" : "error"}`;
  node.textContent = text;
}

function openRebalance() {
  const typeSelect = el("select", { name: "type" }, types().map((t) => el("option", { value: t }, t)));
  const dryRun = el("input", { type: "checkbox", checked: true, "data-testid": "rebalance-dry-run" });
  const downtime = el("input", { type: "checkbox" });
  const result = el("div", { class: "rebalance-result", "data-testid": "rebalance-result" });
  const run = el("button", { type: "button", class: "btn btn-primary" }, "Run rebalance");
  showDialog(`Rebalance ${TABLE}`, el("div", {},
    el("p", { class: "muted" }, "Moves segments so every server of the tenant holds its share. Start with a dry run to preview the target assignment."),
    el("div", { class: "form-actions" }, el("label", { class: "field-inline" }, "Type ", typeSelect),
      el("label", { class: "field-inline" }, dryRun, " Dry run"), el("label", { class: "field-inline" }, downtime, " Allow downtime"), run),
    result));
  run.addEventListener("click", async () => {
    run.disabled = true;
    clear(result, el("p", { class: "muted" }, "Running…"));
    try {
      const out = await api.post(`${PATH}/rebalance`, undefined, { type: typeSelect.value, dryRun: String(dryRun.checked), downtime: String(downtime.checked) });
      const box = el("div", { class: "json-box" });
      clear(result, el("p", {}, badge(out.status || "DONE", String(out.status || "").toLowerCase() === "failed" ? "bad" : "good"), " ", out.description || ""), box);
      jsonEditor(box, out, { readOnly: true });
      if (out.jobId && !dryRun.checked && /IN_PROGRESS/i.test(out.status || "")) pollRebalance(out.jobId, result);
    } catch (err) {
      clear(result, el("div", { class: "alert alert-error" }, errorText(err)));
    } finally {
      run.disabled = false;
    }
  });
}

async function pollRebalance(jobId, host) {
  const line = el("p", { class: "muted", "data-testid": "rebalance-job" }, `Job ${jobId}: checking…`);
  host.prepend(line);
  for (let i = 0; i < 600 && line.isConnected; i += 1) {
    try {
      const status = await api.get(`/rebalanceStatus/${encodeURIComponent(jobId)}`);
      const progress = status.tableRebalanceProgressStats || status;
      const state = progress.status || status.status || "UNKNOWN";
      line.textContent = `Job ${jobId}: ${state}`;
      if (!/IN_PROGRESS|RUNNING|QUEUED/i.test(state)) {
        loadSegments();
        return;
      }
    } catch (err) {
      line.textContent = `Job ${jobId}: ${errorText(err)}`;
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

$("#segment-filter").addEventListener("input", (event) => {
  segmentFilter = event.target.value;
  renderSegments();
});
$("#refresh").addEventListener("click", loadSegments);
$("#reload-all").addEventListener("click", reloadAll);
$("#delete-all").addEventListener("click", deleteAll);
$("#rebalance").addEventListener("click", openRebalance);
$("#delete-table").addEventListener("click", deleteTable);
$("#config-type").addEventListener("change", loadConfig);
$("#config-validate").addEventListener("click", () => validateDoc(configEditor, "/tables/validate", $("#config-feedback")));
$("#config-save").addEventListener("click", saveConfig);
$("#schema-validate").addEventListener("click", () => validateDoc(schemaEditor, "/schemas/validate", $("#schema-feedback")));
$("#schema-save").addEventListener("click", saveSchema);
loadAll();
pageReady();
