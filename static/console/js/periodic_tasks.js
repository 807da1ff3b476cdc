// Periodic tasks: each task's frequency and last run (start, duration, outcome, error) as the
// controllers recorded it (GET /periodictask/status), refreshed every 5 s; Run now over all
// tables or one (GET /periodictask/run) shows the task's report.
import { api } from "./api.js";
import { el, clear, $, notify, errorText, formatTime, showDialog, badge, pageReady } from "./ui.js";
import { jsonEditor } from "./jsonedit.js";
import { formatDuration, errorHeadline, refreshEvery } from "./tasks_common.js";

let statuses = [];
const running = new Set();

// The next scheduled run is the last start plus the period; a negative or missing period
// means the controller does not schedule the task (it can still be run by hand).
function nextRun(task) {
  if (!task.frequencySeconds || task.frequencySeconds <= 0) return el("span", { class: "muted" }, "not scheduled");
  if (task.lastRunTimeMs === null || task.lastRunTimeMs === undefined) return el("span", { class: "muted" }, `every ${task.frequency}, first run pending`);
  const at = task.lastRunTimeMs + task.frequencySeconds * 1000;
  return el("span", {}, at < Date.now() ? `due (${formatTime(at)})` : formatTime(at), el("div", { class: "muted small" }, `every ${task.frequency}`));
}

function outcome(task) {
  if (task.lastRunSuccessful === null || task.lastRunSuccessful === undefined) return el("span", { class: "muted" }, "never run");
  if (task.lastRunSuccessful) return badge("OK", "good");
  return el("span", {}, badge("Failed", "bad"), " ",
    el("span", { class: "subtask-error-line error-text", title: task.lastRunError || "" }, errorHeadline(task.lastRunError)));
}

function showReport(name, table, out, ms) {
  const box = el("div", { class: "json-box" });
  showDialog(`${name}: run over ${table}`, el("div", {},
    el("p", { class: "muted" }, `${out.isSuccessful ? "Succeeded" : "Failed"} in ${formatDuration(ms)} (run ${out.taskId}).`), box));
  jsonEditor(box, out, { readOnly: true });
}

async function runNow(name) {
  const tableName = $("#task-table").value;
  const table = tableName || "all tables";
  running.add(name);
  render();
  const started = performance.now();
  try {
    const out = await api.get("/periodictask/run", { taskname: name, tableName });
    const ms = Math.round(performance.now() - started);
    notify(out.isSuccessful ? `${name} ran over ${table}.` : `${name} failed: ${out.error}`, out.isSuccessful ? "ok" : "error");
    showReport(name, table, out, ms);
  } catch (err) {
    notify(`${name} could not run: ${errorText(err)}`, "error");
  } finally {
    running.delete(name);
    await load();
  }
}

function render() {
  if (!statuses.length) {
    clear($("#tasks"), el("p", { class: "empty" }, "The controller has no periodic tasks."));
    return;
  }
  clear($("#tasks"), el("div", { class: "table-wrap" }, el("table", { class: "data periodic", "data-testid": "tasks-table" },
    // the period and run count hide at 800 px: Next run says the period too
    el("thead", {}, el("tr", {}, ["Task", "Every", "Last run", "Duration", "Outcome", "Next run", "Runs", ""].map((h, i) => el("th", { class: i === 1 || i === 6 ? "hide-narrow" : "" }, h)))),
    el("tbody", {}, statuses.map((task) => {
      const button = el("button", { type: "button", class: "btn btn-small btn-primary", "data-task": task.taskName }, running.has(task.taskName) ? "Running…" : "Run now");
      button.disabled = running.has(task.taskName);
      button.addEventListener("click", () => runNow(task.taskName));
      return el("tr", { "data-task-row": task.taskName },
        el("td", {}, el("span", { class: "mono task-link" }, task.taskName), el("div", { class: "muted small" }, task.description || "")),
        el("td", { class: "nowrap hide-narrow" }, Number(task.frequencySeconds) > 0 ? task.frequency : el("span", { class: "muted" }, "off")),
        el("td", { "data-col": "last-run" }, formatTime(task.lastRunTimeMs)),
        el("td", { class: "num", "data-col": "duration" }, formatDuration(task.lastRunDurationMs)),
        el("td", { "data-col": "outcome" }, outcome(task)),
        el("td", { "data-col": "next-run" }, nextRun(task)),
        el("td", { class: "num hide-narrow" }, String(task.numberOfRuns)),
        el("td", { class: "row-actions" }, button));
    })))));
}

async function load() {
  try {
    statuses = ((await api.get("/periodictask/status")) || []).sort((a, b) => a.taskName.localeCompare(b.taskName));
    render();
  } catch (err) {
    clear($("#tasks"), el("p", { class: "error-text" }, `Could not read the periodic tasks: ${errorText(err)}`));
  }
}

async function init() {
  refreshEvery(load);
  try {
    const { tables = [] } = await api.get("/tables");
    for (const table of tables.sort()) $("#task-table").append(el("option", { value: table }, table));
  } catch {
    // the table choice is optional: tasks still run over all tables
  }
}

init();
pageReady();
