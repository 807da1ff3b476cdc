// A table's runs of one task type: a chart of each run's duration, coloured by outcome (failed
// runs red), and the list of runs with the first line of each failed run's error, from
// GET /tasks/<type>/<table>/debug?verbosity=1. Refreshes every 5 s keeping the filter and the
// reader's scroll position (only the chart data and the list body change).
import { Chart } from "../vendor/chart.js";
import { api } from "./api.js";
import { el, clear, $, errorText, pageReady } from "./ui.js";
import { PAGE, links, pinotTimeMs, shortTime, stateBadge, errorHeadline, refreshEvery } from "./tasks_common.js";
import { secondsDuration } from "./task_times.js";

const FINISHED = new Set(["COMPLETED", "FAILED", "STOPPED", "ABORTED", "TIMED_OUT"]);
const COLOURS = { failed: "#c0392b", ok: "#2e8b57", running: "#d68910" };
let runs = [];
let chart = null;

// One run: a failed run is a FAILED task or one with a subtask in error.
export function toRun(name, debug, now) {
  const start = pinotTimeMs(debug.startTime);
  const finish = pinotTimeMs(debug.finishTime);
  const counts = debug.subtaskCount || {};
  const errors = (debug.subtaskInfos || []).filter((s) => s.info);
  const failed = debug.taskState === "FAILED" || Number(counts.error || 0) > 0 || errors.length > 0;
  const finished = FINISHED.has(debug.taskState);
  return {
    name, start, finish, state: debug.taskState, counts,
    outcome: failed ? "failed" : finished ? "ok" : "running",
    durationMs: start ? (finish || (finished ? start : now)) - start : null,
    error: errors.length ? { subtask: errors[0].taskId, line: errorHeadline(errors[0].info) } : null,
  };
}

function renderChart(shown) {
  const ordered = [...shown].filter((r) => r.start).sort((a, b) => a.start - b.start);
  const data = {
    labels: ordered.map((r) => shortTime(r.start)),
    datasets: [{ label: "duration (s)", data: ordered.map((r) => Math.max(r.durationMs || 0, 0) / 1000),
      backgroundColor: ordered.map((r) => COLOURS[r.outcome]), minBarLength: 3, maxBarThickness: 48 }],
  };
  $("#history-note").textContent = `${ordered.length} run(s); red failed, green completed, amber not finished`;
  if (chart) {
    chart.data = data;
    chart.update("none");
    return;
  }
  chart = new Chart($("#history-chart"), {
    type: "bar", data,
    options: { animation: false, maintainAspectRatio: false, plugins: { legend: { display: false } },
      scales: { y: { beginAtZero: true, title: { display: true, text: "seconds" } } } },
  });
}

function renderList() {
  const filter = $("#history-filter").value;
  const shown = runs.filter((r) => !filter || r.outcome === filter);
  renderChart(shown);
  if (!shown.length) {
    clear($("#history-runs"), el("p", { class: "empty" }, runs.length ? "No run matches the filter." : `No ${PAGE.taskType} task has run on ${PAGE.table}.`));
    return;
  }
  const c = (r, key) => String(r.counts[key] ?? 0);
  clear($("#history-runs"), el("div", { class: "table-wrap" }, el("table", { class: "data", "data-testid": "history-table" },
    el("thead", {}, el("tr", {}, ["Task", "State", "Start", "Duration", "Subtasks", "Error"].map((h) => el("th", {}, h)))),
    el("tbody", {}, shown.map((r) => el("tr", { "data-task": r.name, "data-outcome": r.outcome, class: r.outcome === "failed" ? "run-failed" : "" },
      el("td", {}, el("a", { href: links.task(PAGE.taskType, PAGE.table, r.name), class: "mono task-link" }, r.name)),
      el("td", {}, stateBadge(r.state)),
      el("td", { class: "nowrap" }, shortTime(r.start)),
      el("td", { class: "num" }, secondsDuration(r.durationMs)),
      el("td", { class: "nowrap" }, el("span", { class: "subtask-counts", title: "total · completed · running · waiting · error" },
        c(r, "total"), " · ", el("span", { class: "c-good" }, c(r, "completed")), " · ", el("span", { class: "c-warn" }, c(r, "running")),
        " · ", c(r, "waiting"), " · ", el("span", { class: "c-bad" }, c(r, "error")))),
      el("td", { "data-col": "error" }, r.error ? el("a", {
        href: links.subtask(PAGE.taskType, PAGE.table, r.name, r.error.subtask),
        class: "error-text subtask-error-line", title: r.error.line }, r.error.line) : "")))))));
}

async function load() {
  try {
    const debug = await api.get(`/tasks/${encodeURIComponent(PAGE.taskType)}/${encodeURIComponent(PAGE.table)}/debug`, { verbosity: 1 });
    const now = Date.now();
    runs = Object.entries(debug || {}).map(([name, d]) => toRun(name, d, now)).sort((a, b) => (b.start || 0) - (a.start || 0));
    renderList();
  } catch (err) {
    clear($("#history-runs"), el("div", { class: "alert alert-error", role: "alert" }, errorText(err)));
    return false;
  }
  return true;
}

$("#history-filter").addEventListener("change", renderList);
refreshEvery(load);
pageReady();
