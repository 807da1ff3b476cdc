// One task: state, times, trigger and runtime config; its subtasks (id, state, start, finish,
// minion, the first line of an error with the rest one click away); a timeline with one bar
// per subtask on a time axis, one row per minion, to see parallelism and stragglers; Delete.
import { api } from "./api.js";
import { el, clear, $, badge, notify, errorText, confirmDialog, simpleTable, formatTime, pageReady } from "./ui.js";
import { PAGE, links, pinotTimeMs, shortTime, formatDuration, stateBadge, refreshEvery, errorHeadline, fieldTable } from "./tasks_common.js";

const NAME = PAGE.task;
const BASE = `/tasks/task/${encodeURIComponent(NAME)}`;
// a STOPPED task runs again when its queue is resumed, so it counts as unfinished
const FINISHED = new Set(["COMPLETED", "FAILED", "TIMED_OUT", "ABORTED"]);

function tile(label, value, testid) {
  return el("div", { class: "tile" }, el("span", { class: "tile-label" }, label), el("span", { class: "tile-value tile-small", "data-testid": testid }, value));
}

function renderFields(debug) {
  const start = pinotTimeMs(debug.executionStartTime);
  const finish = pinotTimeMs(debug.finishTime);
  const counts = debug.subtaskCount || {};
  document.title = `${debug.taskState} · ${NAME}`;
  clear($("#task-fields"),
    tile("State", stateBadge(debug.taskState), "task-state"),
    tile("Triggered by", debug.triggeredBy ? badge(debug.triggeredBy, "tag") : "–", "task-trigger"),
    tile("Created", formatTime(pinotTimeMs(debug.startTime)), "task-created"),
    tile("Started", formatTime(start), "task-started"),
    tile("Finished", formatTime(finish), "task-finished"),
    tile("Duration", start ? formatDuration((finish || Date.now()) - start) : "–", "task-duration"));
  $("#subtask-count").textContent = ["total", "completed", "running", "waiting", "error"]
    .map((key) => `${counts[key] ?? 0} ${key}`).join(" · ");
}

const errorId = (subtask) => `error-${subtask.taskId}`;

// The table shows an error's first line; the whole error, traceback and all, is in the
// Errors card below, so a long traceback never stretches the table.
function errorCell(s) {
  if (!s.info) return "";
  return el("a", { href: `#${errorId(s)}`, class: "error-text subtask-error-line", title: errorHeadline(s.info) }, errorHeadline(s.info));
}

function renderErrors(infos) {
  const failed = infos.filter((s) => s.info);
  const host = $("#errors");
  host.hidden = !failed.length;
  const open = new Set([...host.querySelectorAll("details[open]")].map((d) => d.id));
  clear(host, el("div", { class: "card-head" }, el("h2", { class: "error-text" }, "Errors"), el("span", { class: "muted" }, `${failed.length} subtask${failed.length === 1 ? "" : "s"}`)),
    failed.map((s) => el("details", { id: errorId(s), class: "subtask-error", open: open.has(errorId(s)) || failed.length === 1, "data-subtask": s.taskId },
      el("summary", {}, el("span", { class: "mono" }, s.taskId), " ", stateBadge(s.state), " ", el("span", { class: "error-text" }, errorHeadline(s.info))),
      el("pre", { class: "mono" }, s.info),
      el("a", { href: links.subtask(PAGE.taskType, PAGE.table, NAME, s.taskId), class: "small" }, "The whole error and the subtask's config →"))));
}

function renderSubtasks(infos) {
  const now = Date.now();
  clear($("#subtasks"), simpleTable([
    { label: "Subtask", render: (s) => el("a", { href: links.subtask(PAGE.taskType, PAGE.table, NAME, s.taskId), class: "mono subtask-id task-link", title: s.taskId }, `…_${s.taskId.split("_").pop()}`) },
    { label: "State", render: (s) => stateBadge(s.state) },
    { label: "Start", class: "nowrap", render: (s) => shortTime(pinotTimeMs(s.startTime)) },
    { label: "Finish", class: "nowrap", render: (s) => shortTime(pinotTimeMs(s.finishTime)) },
    { label: "Duration", class: "nowrap hide-narrow", render: (s) => (pinotTimeMs(s.startTime) ? formatDuration((pinotTimeMs(s.finishTime) || now) - pinotTimeMs(s.startTime)) : "–") },
    { label: "Minion", render: (s) => (s.participant ? el("span", { class: "mono" }, s.participant) : el("span", { class: "muted" }, "not taken yet")) },
    { label: "Error", render: errorCell },
  ], infos, { empty: "This task has no subtask.", testid: "subtasks-table" }));
}

// Bars positioned in percent of [first start, last finish or now]. The API gives times to the
// second, so back-to-back subtasks may touch; only a real overlap (a minion running two at
// once) opens a second lane in that minion's row.
function lanes(spans) {
  const ends = [];
  return spans.sort((a, b) => a.from - b.from).map((span) => {
    let lane = ends.findIndex((end) => end <= span.from);
    if (lane < 0) lane = ends.push(0) - 1;
    ends[lane] = span.to;
    return { ...span, lane };
  });
}

function renderTimeline(infos) {
  const now = Date.now();
  const spans = infos.filter((s) => pinotTimeMs(s.startTime)).map((s) => ({
    ...s, from: pinotTimeMs(s.startTime), to: pinotTimeMs(s.finishTime) || now,
  }));
  if (!spans.length) {
    clear($("#timeline"), el("p", { class: "muted" }, "No subtask has started yet."));
    return;
  }
  const t0 = Math.min(...spans.map((s) => s.from));
  const t1 = Math.max(...spans.map((s) => s.to), t0 + 1000);
  const pct = (t) => ((t - t0) / (t1 - t0)) * 100;
  const byMinion = new Map();
  for (const span of spans) {
    const key = span.participant || "(unknown minion)";
    if (!byMinion.has(key)) byMinion.set(key, []);
    byMinion.get(key).push(span);
  }
  clear($("#timeline"),
    [...byMinion.entries()].sort().map(([minion, list]) => {
      const placed = lanes(list);
      const height = Math.max(...placed.map((s) => s.lane)) + 1;
      return el("div", { class: "tl-row", "data-minion": minion },
        el("div", { class: "tl-label mono", title: minion }, minion),
        el("div", { class: "tl-track", style: `height:${height * 20 + 2}px` }, placed.map((s) => el("div", {
          class: `tl-bar tl-${String(s.state || "WAITING").toLowerCase()}`,
          style: `left:${pct(s.from)}%;width:max(4px, ${pct(s.to) - pct(s.from)}%);top:${s.lane * 20 + 3}px`,
          title: `${s.taskId}: ${s.state || "WAITING"}, ${formatDuration(s.to - s.from)} (to the second)`,
        }, s.taskId.split("_").pop()))));
    }),
    el("div", { class: "tl-axis" }, el("span", {}, shortTime(t0)), el("span", {}, `${formatDuration(t1 - t0)}, to the second`), el("span", {}, shortTime(t1))));
}

async function loadRuntime() {
  try {
    const runtime = await api.get(`${BASE}/runtime/config`);
    clear($("#runtime-config"), fieldTable(Object.entries(runtime).map(([k, v]) => [k, el("span", { class: "mono" }, String(v))]), "runtime-table"));
  } catch (err) {
    clear($("#runtime-config"), el("p", { class: "error-text" }, errorText(err)));
  }
}

async function load() {
  try {
    const debug = await api.get(`${BASE}/debug`, { verbosity: 1 });
    const infos = debug.subtaskInfos || [];
    renderFields(debug);
    renderSubtasks(infos);
    renderErrors(infos);
    renderTimeline(infos);
    return !FINISHED.has(debug.taskState);
  } catch (err) {
    clear($("#subtasks"), el("p", { class: "error-text" }, errorText(err)));
    return err.status !== 404;
  }
}

const force = el("input", { type: "checkbox", id: "force-delete" });
$("#task-delete").addEventListener("click", async () => {
  const ok = await confirmDialog("Delete this task?", `${NAME} and its subtasks are deleted. Unless forced, the ${PAGE.taskType} queue must be stopped first.`,
    { confirmLabel: "Delete", danger: true, extra: el("label", { class: "field-inline", for: "force-delete" }, force, "Force (also while the queue runs)") });
  if (!ok) return;
  try {
    await api.del(BASE, { forceDelete: force.checked ? "true" : "false" });
    window.location.href = links.table(PAGE.taskType, PAGE.table);
  } catch (err) {
    notify(errorText(err), "error");
  }
});

loadRuntime();
refreshEvery(load);
pageReady();
