// Periodic tasks: the controller's task names (GET /periodictask/names), Run now over all
// tables or one (GET /periodictask/run, as Pinot), and the last run started from this browser
// with its report. The REST API has no endpoint for runs started elsewhere.
import { api } from "./api.js";
import { el, clear, $, notify, errorText, formatTime, showDialog, badge, pageReady } from "./ui.js";
import { jsonEditor } from "./jsonedit.js";

const KEY = "sprig.periodicTaskRuns.v1";

function lastRuns() {
  try {
    return JSON.parse(localStorage.getItem(KEY) || "{}") || {};
  } catch {
    return {};
  }
}

function saveRun(name, run) {
  const runs = lastRuns();
  runs[name] = run;
  try {
    localStorage.setItem(KEY, JSON.stringify(runs));
  } catch {
    // storage unavailable: the page still shows the report of this run
  }
}

function showReport(name, run) {
  const box = el("div", { class: "json-box" });
  showDialog(`${name}: last run`, el("div", {}, el("p", { class: "muted" }, `${formatTime(run.at)}, ${run.ms} ms`), box));
  jsonEditor(box, run.response, { readOnly: true });
}

async function runNow(name, button) {
  const tableName = $("#task-table").value;
  button.disabled = true;
  const started = performance.now();
  try {
    const response = await api.get("/periodictask/run", { taskname: name, tableName });
    const run = { at: Date.now(), ms: Math.round(performance.now() - started), status: "ok", table: tableName || "all tables", response };
    saveRun(name, run);
    notify(`${name} ran over ${run.table} in ${run.ms} ms.`, "ok");
  } catch (err) {
    saveRun(name, { at: Date.now(), ms: Math.round(performance.now() - started), status: "error", table: tableName || "all tables", response: { error: errorText(err) } });
    notify(`${name} failed: ${errorText(err)}`, "error");
  } finally {
    button.disabled = false;
    render();
  }
}

let names = [];

function render() {
  const runs = lastRuns();
  clear($("#tasks"), names.length ? el("div", { class: "table-wrap" }, el("table", { class: "data", "data-testid": "tasks-table" },
    el("thead", {}, el("tr", {}, el("th", {}, "Task"), el("th", {}, "Last run (this browser)"), el("th", {}, "Outcome"), el("th", {}, ""))),
    el("tbody", {}, names.map((name) => {
      const run = runs[name];
      const button = el("button", { type: "button", class: "btn btn-small btn-primary", "data-task": name }, "Run now");
      button.addEventListener("click", () => runNow(name, button));
      return el("tr", { "data-task-row": name },
        el("td", { class: "mono" }, name),
        el("td", {}, run ? `${formatTime(run.at)} over ${run.table} (${run.ms} ms)` : el("span", { class: "muted" }, "not run from here")),
        el("td", {}, run ? el("button", { type: "button", class: "link", onclick: () => showReport(name, run) }, badge(run.status === "ok" ? "OK" : "Error", run.status === "ok" ? "good" : "bad"), " report") : "–"),
        el("td", {}, button));
    })))) : el("p", { class: "empty" }, "The controller has no periodic tasks."));
}

async function init() {
  try {
    names = ((await api.get("/periodictask/names")) || []).sort();
    render();
  } catch (err) {
    clear($("#tasks"), el("p", { class: "error-text" }, `Could not list periodic tasks: ${errorText(err)}`));
  }
  try {
    const { tables = [] } = await api.get("/tables");
    for (const table of tables.sort()) $("#task-table").append(el("option", { value: table }, table));
  } catch {
    // the table filter is optional: tasks still run over all tables
  }
}

init();
pageReady();
