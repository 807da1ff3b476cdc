// The query console: table sidebar, SQL editor, results grid, stats, chart, trace, JSON and history.
// Queries go to the controller's POST /sql, which forwards them to a broker of the table.
import { EditorView, EditorState, basicSetup, sql, StandardSQL, keymap, Prec, Compartment, placeholder } from "../vendor/codemirror.js";
import { api, ApiError } from "./api.js";
import { el, clear, $, notify, errorText, tabs, formatTime, pageReady } from "./ui.js";
import { ResultGrid } from "./grid.js";
import { ResultChart, chartPlan } from "./resultchart.js";
import { loadHistory, recordQuery, clearHistory } from "./history.js";
import { jsonEditor } from "./jsonedit.js";

const DEFAULT_TIMEOUT_MS = 10000;
const schemas = new Map(); // table -> Pinot schema JSON
const timeColumns = new Set();
const completion = new Compartment();
let lastResponse = null;
let running = null;

const grid = new ResultGrid($("#grid"), { filename: "query-result" });
const chart = new ResultChart($("#chart-canvas"));
const rawJson = jsonEditor($("#json-view"), "", { readOnly: true });
const selectTab = tabs($("#result-tabs"), (name) => {
  if (name === "chart") drawChart();
  if (name === "history") renderHistory();
});

const editor = new EditorView({
  parent: $("#editor"),
  state: EditorState.create({
    doc: "",
    extensions: [
      Prec.highest(keymap.of([{ key: "Mod-Enter", run: () => (runQuery(), true) }])),
      basicSetup,
      completion.of(sql({ dialect: StandardSQL, upperCaseKeywords: false })),
      StandardSQL.language.data.of({ autocomplete: completeColumns }),
      placeholder("select * from airlineStats limit 10   (Ctrl/Cmd+Enter runs)"),
      EditorView.lineWrapping,
    ],
  }),
});
window.sprigEditor = editor; // for tests and debugging: the live CodeMirror view

function sqlText() {
  return editor.state.doc.toString().trim();
}

function setSql(text) {
  editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: text } });
}

function columnsOf(schema) {
  const specs = [
    ...(schema.dimensionFieldSpecs || []).map((s) => ({ ...s, kind: "DIMENSION" })),
    ...(schema.metricFieldSpecs || []).map((s) => ({ ...s, kind: "METRIC" })),
    ...(schema.dateTimeFieldSpecs || []).map((s) => ({ ...s, kind: "DATE_TIME" })),
  ];
  const time = schema.timeFieldSpec && (schema.timeFieldSpec.outgoingGranularitySpec || schema.timeFieldSpec.incomingGranularitySpec);
  if (time) specs.push({ name: time.name, dataType: time.dataType, kind: "TIME" });
  return specs;
}

// Columns of the tables the query reads (FROM/JOIN), or of the table picked in the sidebar:
// Pinot queries name columns bare, which the SQL language's own completion does not offer.
function completeColumns(context) {
  const word = context.matchBefore(/[A-Za-z_$][\w$]*/);
  if (!word && !context.explicit) return null;
  const text = context.state.doc.toString();
  const named = [...text.matchAll(/\b(?:from|join)\s+([A-Za-z_][\w]*)/gi)].map((m) => m[1]);
  const picked = document.querySelector(".table-link.active");
  const tables = named.length ? named : picked ? [picked.dataset.table] : [];
  const options = [];
  for (const table of tables) {
    const schema = schemas.get(table);
    if (!schema) continue;
    for (const column of columnsOf(schema)) options.push({ label: column.name, type: "property", detail: `${table} · ${column.dataType}`, boost: 1 });
  }
  if (!options.length) return null;
  return { from: word ? word.from : context.pos, options, validFor: /^[\w$]*$/ };
}

function refreshCompletion() {
  const tables = {};
  for (const [table, schema] of schemas) tables[table] = columnsOf(schema).map((c) => c.name);
  editor.dispatch({ effects: completion.reconfigure(sql({ dialect: StandardSQL, schema: tables, upperCaseKeywords: false })) });
}

async function loadSchema(table) {
  if (schemas.has(table)) return schemas.get(table);
  const schema = await api.get(`/tables/${encodeURIComponent(table)}/schema`);
  schemas.set(table, schema);
  for (const spec of columnsOf(schema)) if (spec.kind === "DATE_TIME" || spec.kind === "TIME") timeColumns.add(spec.name);
  return schema;
}

function showSchema(table, schema) {
  const cols = columnsOf(schema);
  clear($("#table-schema"),
    el("h3", {}, table, el("span", { class: "muted" }, ` ${cols.length} columns`)),
    el("table", { class: "data compact", "data-testid": "sidebar-schema" },
      el("thead", {}, el("tr", {}, el("th", {}, "Column"), el("th", {}, "Type"), el("th", {}, "Field"))),
      el("tbody", {}, cols.map((c) => el("tr", {},
        el("td", { class: "mono" }, el("button", { type: "button", class: "link mono column-name", title: "Insert into the query",
          onclick: () => { editor.dispatch(editor.state.replaceSelection(c.name)); editor.focus(); } }, c.name)),
        el("td", {}, c.dataType + (c.singleValueField === false ? "[]" : "")),
        el("td", { class: "muted", title: c.kind }, { DIMENSION: "dim", METRIC: "metric", DATE_TIME: "time", TIME: "time" }[c.kind]))))));
}

async function loadTables() {
  const list = $("#table-list");
  try {
    const { tables = [] } = await api.get("/tables");
    const filter = $("#table-filter");
    const render = () => {
      const needle = filter.value.toLowerCase();
      const shown = tables.filter((t) => t.toLowerCase().includes(needle)).sort();
      clear(list, shown.length ? shown.map((t) => el("li", {}, el("button", {
        type: "button", class: "table-link", "data-table": t,
        onclick: (event) => chooseTable(t, event.currentTarget),
      }, t))) : el("li", { class: "empty" }, tables.length ? "No table matches." : "No tables yet."));
    };
    filter.addEventListener("input", render);
    render();
    await Promise.allSettled(tables.slice(0, 50).map(loadSchema));
    refreshCompletion();
  } catch (err) {
    clear(list, el("li", { class: "error-text" }, `Could not list tables: ${errorText(err)}`));
  }
}

async function chooseTable(table, button) {
  for (const b of document.querySelectorAll(".table-link")) b.classList.toggle("active", b === button);
  setSql(`select * from ${table} limit 10`);
  try {
    showSchema(table, await loadSchema(table));
    refreshCompletion();
  } catch (err) {
    clear($("#table-schema"), el("p", { class: "error-text" }, `Could not load the schema of ${table}: ${errorText(err)}`));
  }
  editor.focus();
}

function timeoutMs() {
  const value = Number($("#timeout").value);
  return Number.isFinite(value) && value > 0 ? Math.round(value) : DEFAULT_TIMEOUT_MS;
}

function stateUrl(query) {
  const url = new URL(window.location.href);
  url.search = "";
  url.searchParams.set("query", query);
  if (timeoutMs() !== DEFAULT_TIMEOUT_MS) url.searchParams.set("timeout", String(timeoutMs()));
  if ($("#tracing").checked) url.searchParams.set("tracing", "true");
  return url;
}

const STATS = [
  ["timeUsedMs", "Time (ms)"],
  ["numDocsScanned", "Docs scanned"],
  ["totalDocs", "Total docs"],
  ["numSegmentsQueried", "Segments queried"],
  ["numSegmentsProcessed", "Segments processed"],
  ["numSegmentsMatched", "Segments matched"],
  ["numServersQueried", "Servers queried"],
  ["numServersResponded", "Servers responded"],
  ["numEntriesScannedInFilter", "Entries scanned in filter"],
  ["numEntriesScannedPostFilter", "Entries scanned post filter"],
  ["partialResult", "Partial result"],
];

function renderStats(response) {
  const partial = response.partialResult ?? response.partialResponse ?? false;
  clear($("#stats"), STATS.map(([key, label]) => {
    let value = key === "partialResult" ? partial : response[key];
    if (value === undefined) return null;
    const warn = (key === "partialResult" && value) || (key === "numServersResponded" && value < response.numServersQueried);
    return el("div", { class: warn ? "stat warn" : "stat", "data-stat": key },
      el("span", { class: "stat-label" }, label), el("span", { class: "stat-value" }, String(value)));
  }));
  $("#stats").hidden = false;
}

// traceInfo (Tracing checked): per server, the broker's round trip, the server's own stages,
// then each segment's operators, one row per timing.
function traceRows(traceInfo) {
  const rows = [];
  const num = (v) => el("td", { class: "num" }, v === undefined ? "–" : String(v));
  for (const [server, info] of Object.entries(traceInfo).sort(([a], [b]) => a.localeCompare(b))) {
    rows.push(el("tr", { class: "trace-server", "data-server": server },
      el("td", { class: "mono" }, server), el("td", {}, "–"),
      el("td", {}, info.responded ? "Round trip (broker)" : "Round trip (no answer)"), num(info.timeUsedMs), num()));
    for (const op of info.operators || []) {
      rows.push(el("tr", {}, el("td", { class: "mono" }, server), el("td", {}, "–"), el("td", {}, op.operator), num(op.timeMs), num()));
    }
    for (const segment of info.segments || []) {
      for (const op of segment.operators || []) {
        rows.push(el("tr", { class: "trace-segment", "data-segment": segment.segment },
          el("td", { class: "mono" }, server), el("td", { class: "mono" }, segment.segment),
          el("td", {}, op.operator), num(op.timeMs), num(segment.numDocsScanned)));
      }
    }
  }
  return rows;
}

function renderTrace(response) {
  const traceInfo = response.traceInfo;
  $("#tab-trace").disabled = !traceInfo;
  $("#tab-trace").title = traceInfo ? "" : "Run the query with Tracing checked";
  if (!traceInfo) {
    clear($("#trace"));
    if ($("#tab-trace").classList.contains("active")) selectTab("table");
    return;
  }
  clear($("#trace"), el("div", { class: "table-wrap" }, el("table", { class: "data", "data-testid": "trace-table" },
    el("thead", {}, el("tr", {}, el("th", {}, "Server"), el("th", {}, "Segment"), el("th", {}, "Operator"),
      el("th", { class: "num" }, "Time (ms)"), el("th", { class: "num" }, "Docs scanned"))),
    el("tbody", {}, traceRows(traceInfo)))));
}

function renderError(title, exceptions) {
  clear($("#query-error"), el("strong", {}, title),
    el("ul", {}, exceptions.map((e) => el("li", { "data-testid": "query-exception" },
      e.errorCode !== undefined ? el("span", { class: "error-code" }, `Error ${e.errorCode}`) : null, " ", e.message))));
  $("#query-error").hidden = false;
}

async function runQuery({ push = true } = {}) {
  const query = sqlText();
  if (!query) {
    notify("Write a query first, or pick a table on the left.", "info");
    return;
  }
  if (running) running.abort();
  running = new AbortController();
  if (push && stateUrl(query).href !== window.location.href) history.pushState({ query }, "", stateUrl(query));
  $("#query-error").hidden = true;
  $("#run").disabled = true;
  $("#run-status").textContent = "Running…";
  const started = performance.now();
  const body = { sql: query, trace: $("#tracing").checked, queryOptions: `timeoutMs=${timeoutMs()}` };
  let response;
  try {
    response = await api.post("/sql", body, undefined, { signal: running.signal });
  } catch (err) {
    if (err.name === "AbortError") return;
    const exceptions = err instanceof ApiError && err.body && Array.isArray(err.body.exceptions) && err.body.exceptions.length
      ? err.body.exceptions : [{ errorCode: err.status, message: errorText(err) }];
    renderError("The query failed", exceptions);
    renderTrace({}); // no answer, no trace: the last query's must not pass for this one's
    recordQuery({ sql: query, at: Date.now(), status: "error", error: exceptions[0].message });
    finish(started, "Failed");
    return;
  }
  lastResponse = response;
  rawJson.set(response);
  renderStats(response);
  renderTrace(response);
  const exceptions = response.exceptions || [];
  const table = response.resultTable;
  if (exceptions.length) renderError(table ? "The query returned partial results with errors" : "The broker returned an error", exceptions);
  if (table) {
    grid.setData(table.dataSchema.columnNames, table.dataSchema.columnDataTypes, table.rows);
    $("#results").hidden = false;
    const plan = chartPlan(table.dataSchema, timeColumns);
    $("#tab-chart").disabled = Boolean(plan.reason);
    $("#tab-chart").title = plan.reason || "";
    if ($("#tab-chart").classList.contains("active")) {
      if (plan.reason) selectTab("table");
      else drawChart();
    }
  } else {
    clear($("#grid"), el("p", { class: "empty" }, "No result table: see the error above."));
  }
  $("#results").hidden = false;
  recordQuery({
    sql: query, at: Date.now(), status: exceptions.length ? "error" : "ok",
    timeUsedMs: response.timeUsedMs, numRows: table ? table.rows.length : 0,
    error: exceptions.length ? exceptions[0].message : undefined,
  });
  finish(started, exceptions.length ? "Finished with errors" : "Done");
}

function finish(started, text) {
  $("#run").disabled = false;
  $("#run-status").textContent = `${text} in ${Math.round(performance.now() - started)} ms`;
  running = null;
  if (!$("#panel-history").hidden) renderHistory();
}

function drawChart() {
  if (!lastResponse || !lastResponse.resultTable) return;
  const { dataSchema, rows } = lastResponse.resultTable;
  const plan = chartPlan(dataSchema, timeColumns);
  if (plan.reason) {
    $("#chart-note").textContent = plan.reason;
    chart.destroy();
    return;
  }
  const kind = $("#chart-kind").value === "auto" ? plan.kind : $("#chart-kind").value;
  $("#chart-note").textContent = `${kind === "line" ? "Line" : "Bar"} chart of ${plan.series.map((i) => dataSchema.columnNames[i]).join(", ")} by ${dataSchema.columnNames[plan.x]}`;
  chart.draw(dataSchema, rows, plan, kind);
}

// Today's queries show their time only; older ones their date too.
function shortTime(ms) {
  const date = new Date(ms);
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString() : date.toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
}

function renderHistory() {
  const entries = loadHistory();
  clear($("#history"), entries.length ? el("div", { class: "table-wrap" }, el("table", { class: "data", "data-testid": "history" },
    el("thead", {}, el("tr", {}, el("th", {}, "When"), el("th", {}, "Status"), el("th", { class: "num" }, "Time (ms)"), el("th", { class: "num" }, "Rows"), el("th", {}, "Query"))),
    el("tbody", {}, entries.map((e) => el("tr", { class: "history-row" },
      el("td", { class: "nowrap", title: formatTime(e.at) }, shortTime(e.at)),
      el("td", {}, el("span", { class: `badge badge-${e.status === "ok" ? "good" : "bad"}`, title: e.error || "" }, e.status === "ok" ? "OK" : "Error")),
      el("td", { class: "num" }, e.timeUsedMs ?? "–"),
      el("td", { class: "num" }, e.numRows ?? "–"),
      el("td", { class: "history-query" }, el("button", { type: "button", class: "link mono history-sql", title: "Load into the editor",
        onclick: () => { setSql(e.sql); editor.focus(); } }, e.sql))))))) : el("p", { class: "empty" }, "No queries yet. Queries you run are kept here, in this browser."));
}

function applyUrl() {
  const params = new URLSearchParams(window.location.search);
  $("#timeout").value = params.get("timeout") || String(DEFAULT_TIMEOUT_MS);
  $("#tracing").checked = params.get("tracing") === "true";
  const query = params.get("query");
  if (query) {
    setSql(query);
    runQuery({ push: false });
  }
}

$("#run").addEventListener("click", () => runQuery());
$("#chart-kind").addEventListener("change", drawChart);
$("#history-clear").addEventListener("click", () => {
  clearHistory();
  renderHistory();
});
window.addEventListener("popstate", applyUrl);
loadTables();
applyUrl();
pageReady();
