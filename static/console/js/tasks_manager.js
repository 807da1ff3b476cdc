// Minion Task Manager: task types, minions (alive or not, with tags), running and waiting
// subtasks (GET /tasks/summary), and one row per task queue with its task count and state.
// Registered types without a queue yet are listed too, so their pages can be reached.
import { api, instanceRole } from "./api.js";
import { el, clear, $, badge, errorText, simpleTable, pageReady } from "./ui.js";
import { PAGE, links, stateBadge, refreshEvery } from "./tasks_common.js";

async function loadQueues() {
  const types = (await api.get("/tasks/tasktypes")) || [];
  const rows = await Promise.all(types.map(async (type) => {
    const [count, state] = await Promise.all([
      api.get(`/tasks/${encodeURIComponent(type)}/tasks/count`).catch(() => null),
      api.get(`/tasks/${encodeURIComponent(type)}/state`).catch(() => null),
    ]);
    return { type, count, state };
  }));
  for (const type of PAGE.registeredTypes || []) {
    if (!types.includes(type)) rows.push({ type, count: 0, state: null });
  }
  rows.sort((a, b) => a.type.localeCompare(b.type));
  clear($("#tile-types"), String(types.length),
    el("span", { class: "tile-label" }, `${(PAGE.registeredTypes || []).length} registered`));
  clear($("#queues"), simpleTable([
    { label: "Task type", render: (r) => el("a", { href: links.queue(r.type) }, r.type) },
    { label: "Tasks in queue", class: "num", render: (r) => (r.count === null || !r.state ? "–" : String(r.count)) },
    { label: "Queue state", render: (r) => (r.state ? stateBadge(r.state) : el("span", { class: "muted" }, "no queue yet")) },
  ], rows, { empty: "No task type is registered.", testid: "queues-table" }));
}

async function loadSummary() {
  const summary = await api.get("/tasks/summary");
  clear($("#tile-running"), String(summary.totalRunningTasks ?? 0));
  clear($("#tile-waiting"), String(summary.totalWaitingTasks ?? 0));
}

async function loadMinions() {
  const { instances = [] } = await api.get("/instances");
  const minions = await Promise.all(instances.filter((id) => instanceRole(id) === "minion").sort().map((id) =>
    api.get(`/instances/${encodeURIComponent(id)}`).catch((err) => ({ instanceName: id, error: errorText(err) }))));
  const dead = minions.filter((m) => !m.error && !m.alive).length;
  clear($("#tile-minions"), String(minions.length - dead),
    el("span", { class: "tile-label" }, "alive"),
    dead ? el("span", { class: "tile-label error-text", "data-testid": "minions-not-alive" }, `${dead} not alive`) : "");
  clear($("#minions"), simpleTable([
    { label: "Minion", render: (m) => el("span", { class: "mono" }, m.instanceName) },
    { label: "Alive", render: (m) => (m.error ? el("span", { class: "error-text" }, m.error) : badge(m.alive ? "Alive" : "Dead", m.alive ? "alive" : "dead")) },
    { label: "Tags", render: (m) => (m.tags || []).map((t) => badge(t, "tag")) },
  ], minions, { empty: "No minion is registered: start one with `sprig minion`.", testid: "minions-table" }));
}

function section(name, load) {
  return load().catch((err) => clear($(name), el("p", { class: "error-text" }, errorText(err))));
}

refreshEvery(() => Promise.all([section("#queues", loadQueues), section("#minions", loadMinions),
  loadSummary().catch(() => {})]));
pageReady();
