// A task type's queue: its state and tasks by state; Stop all, Resume all, Clean up and
// Delete, each confirmed first; and the tables of the type. Pinot lists only the tables
// configured for the type (GET /tables?taskType=); tables that ran ad-hoc tasks of it come
// with the page, so they are not hidden.
import { api } from "./api.js";
import { el, clear, $, badge, notify, errorText, confirmDialog, simpleTable, pageReady } from "./ui.js";
import { PAGE, links, stateBadge, refreshEvery } from "./tasks_common.js";

const TYPE = PAGE.taskType;
const BASE = `/tasks/${encodeURIComponent(TYPE)}`;
// a STOPPED task runs again when its queue is resumed, so it counts as unfinished
const FINISHED = new Set(["COMPLETED", "FAILED", "TIMED_OUT", "ABORTED"]);
let hasQueue = false;

async function configuredTables() {
  const out = [];
  for (const type of ["OFFLINE", "REALTIME"]) {
    const { tables = [] } = await api.get("/tables", { taskType: TYPE, type });
    out.push(...tables.map((name) => `${name}_${type}`));
  }
  return out;
}

async function loadQueue() {
  let states = {};
  try {
    const state = await api.get(`${BASE}/state`);
    states = (await api.get(`${BASE}/taskstates`)) || {};
    hasQueue = true;
    clear($("#queue-state"), stateBadge(state));
  } catch (err) {
    if (err.status !== 404) throw err;
    hasQueue = false;
    clear($("#queue-state"), PAGE.registered ? el("span", { class: "muted" }, "no queue yet: schedule a task from a table below")
      : el("span", { class: "error-text", "data-testid": "unknown-type" }, `${TYPE} is not a task type this controller knows, and has no queue`));
  }
  for (const id of ["#queue-stop", "#queue-resume", "#queue-cleanup", "#queue-delete"]) $(id).disabled = !hasQueue;
  const byState = {};
  for (const state of Object.values(states)) byState[state] = (byState[state] || 0) + 1;
  clear($("#queue-tiles"),
    el("div", { class: "tile" }, el("span", { class: "tile-label" }, "Tasks"), el("span", { class: "tile-value", "data-testid": "queue-task-count" }, String(Object.keys(states).length))),
    Object.entries(byState).sort().map(([state, n]) => el("div", { class: "tile" },
      el("span", { class: "tile-label" }, state), el("span", { class: "tile-value" }, String(n)))));
}

// Names come from the configs and the page data; the counts are read live, per table.
async function loadTables() {
  const configured = new Set(await configuredTables());
  const ran = PAGE.tablesThatRan || [];
  const names = [...new Set([...configured, ...ran])].sort();
  const states = await Promise.all(names.map((t) => (hasQueue
    ? api.get(`${BASE}/${encodeURIComponent(t)}/state`).catch(() => ({})) : {})));
  const rows = names.map((table, i) => ({ table, states: Object.values(states[i] || {}) }));
  clear($("#queue-tables"), simpleTable([
    { label: "Table", render: (r) => el("a", { href: links.table(TYPE, r.table), class: "mono" }, r.table) },
    { label: "In its config", render: (r) => (configured.has(r.table) ? badge("configured", "good") : badge("ad hoc only", "tag")) },
    { label: "Tasks", class: "num", render: (r) => String(r.states.length) },
    { label: "Unfinished", class: "num", render: (r) => String(r.states.filter((st) => !FINISHED.has(st)).length) },
    { label: "History", render: (r) => (r.states.length ? el("a", { href: links.history(TYPE, r.table), "data-testid": "history-link" }, "runs") : el("span", { class: "muted" }, "–")) },
  ], rows, { empty: `No table is configured for ${TYPE} or ran it.`, testid: "queue-tables-table" }));
}

function operation(button, { title, message, verb, run, danger = false, extra }) {
  button.addEventListener("click", async () => {
    if (!(await confirmDialog(title, message, { confirmLabel: verb, danger, extra }))) return;
    button.disabled = true;
    try {
      const out = await run();
      notify(out?.status || `${verb}: done`, "ok");
    } catch (err) {
      notify(errorText(err), "error");
    } finally {
      button.disabled = false;
      await refresh();
    }
  });
}

operation($("#queue-stop"), {
  title: `Stop ${TYPE}?`, verb: "Stop all",
  message: "No new subtask of this type is sent to a minion; subtasks already running finish. Scheduling this type is refused until it is resumed.",
  run: () => api.put(`${BASE}/stop`),
});
operation($("#queue-resume"), {
  title: `Resume ${TYPE}?`, verb: "Resume all", message: "Waiting subtasks are sent to the minions again and scheduling is allowed.",
  run: () => api.put(`${BASE}/resume`),
});
operation($("#queue-cleanup"), {
  title: `Clean up ${TYPE}?`, verb: "Clean up", message: "Removes the queue's finished tasks (completed, failed, timed out, aborted) and their records.",
  run: () => api.put(`${BASE}/cleanup`),
});
const force = el("input", { type: "checkbox", id: "force-delete" });
operation($("#queue-delete"), {
  title: `Delete the ${TYPE} queue?`, verb: "Delete", danger: true,
  message: "Deletes the queue with all its tasks and subtasks. Unless forced, the queue must be stopped or have no unfinished task.",
  extra: el("label", { class: "field-inline", for: "force-delete" }, force, "Force (also while tasks run)"),
  run: () => api.del(BASE, { forceDelete: force.checked ? "true" : "false" }),
});

async function refresh() {
  try {
    await loadQueue();
  } catch (err) {
    clear($("#queue-state"), el("span", { class: "error-text" }, errorText(err)));
  }
  await loadTables().catch((err) => clear($("#queue-tables"), el("p", { class: "error-text" }, `Could not list tables: ${errorText(err)}`)));
}

refreshEvery(refresh);
pageReady();
