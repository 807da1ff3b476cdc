// Shared by the minion task manager pages: page data, links, Pinot's debug times, state
// badges, durations and a 5 s refresh that skips hidden tabs and never overlaps itself.
import { el, badge } from "./ui.js";

export const PAGE = JSON.parse(document.getElementById("page-data")?.textContent || "{}");
export const REFRESH_MS = 5000;

const enc = encodeURIComponent;
export const links = {
  queue: (type) => `/console/task-queue/${enc(type)}`,
  table: (type, table) => `/console/task-queue/${enc(type)}/tables/${enc(table)}`,
  task: (type, table, task) => `/console/task-queue/${enc(type)}/tables/${enc(table)}/task/${enc(task)}`,
  subtask: (type, table, task, subtask) => `${links.task(type, table, task)}/sub-task/${enc(subtask)}`,
  history: (type, table) => `${links.table(type, table)}/history`,
};

// The debug API formats times as Pinot does, "yyyy-MM-dd HH:mm:ss UTC"; returns epoch ms.
export function pinotTimeMs(text) {
  if (!text) return null;
  const ms = Date.parse(String(text).replace(" UTC", "Z").replace(" ", "T"));
  return Number.isNaN(ms) ? null : ms;
}

// Today's times without the date, so a tasks table fits 800 px; other days in full.
export function shortTime(ms) {
  if (!ms && ms !== 0) return "–";
  const date = new Date(Number(ms));
  if (Number.isNaN(date.getTime())) return String(ms);
  return date.toDateString() === new Date().toDateString() ? date.toLocaleTimeString() : date.toLocaleString();
}

export function formatDuration(ms) {
  if (ms === null || ms === undefined || ms < 0) return "–";
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

const KINDS = {
  COMPLETED: "good", IN_PROGRESS: "warn", RUNNING: "warn", INIT: "warn", NOT_STARTED: "tag",
  WAITING: "tag", STOPPING: "warn", STOPPED: "disabled", FAILED: "bad", FAILING: "bad",
  TASK_ERROR: "bad", ERROR: "bad", TIMED_OUT: "bad", TIMING_OUT: "bad", ABORTED: "bad",
  TASK_ABORTED: "bad", DROPPED: "bad",
};

// A subtask has no state until a minion takes it: shown as WAITING, as Pinot's counts name it.
export function stateBadge(state) {
  const text = state || "WAITING";
  return el("span", { class: "state", "data-state": text }, badge(text, KINDS[text] || "tag"));
}

// The line that says what went wrong. A Python traceback names the exception on its last
// unindented line (its first line is only "Traceback (most recent call last):").
export function errorHeadline(text) {
  const lines = String(text || "").split("\n").filter((line) => line.trim());
  if (!lines.length) return "";
  if (!lines[0].startsWith("Traceback")) return lines[0];
  const framing = /^(Traceback|During handling|The above exception)/;
  return [...lines].reverse().find((line) => !/^\s/.test(line) && !framing.test(line)) || lines[0];
}

// Calls `load` now and every REFRESH_MS while the tab is visible; `load` returns false to stop.
export function refreshEvery(load) {
  let busy = false;
  let stopped = false;
  const run = async () => {
    if (busy || stopped || document.hidden) return;
    busy = true;
    try {
      if ((await load()) === false) stopped = true;
    } finally {
      busy = false;
    }
  };
  run();
  const timer = setInterval(() => (stopped ? clearInterval(timer) : run()), REFRESH_MS);
  document.addEventListener("visibilitychange", run);
  return run;
}

// [[label, value]] as a compact key/value table.
export function fieldTable(pairs, testid) {
  return el("table", { class: "data kv", "data-testid": testid },
    el("tbody", {}, pairs.map(([key, value]) => el("tr", {}, el("th", { scope: "row" }, key), el("td", {}, value)))));
}
