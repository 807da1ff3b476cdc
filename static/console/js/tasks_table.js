// One table's tasks of one type: Schedule now (the new task names, "nothing to schedule", or
// the generation and scheduling errors), Schedule ad hoc (POST /tasks/execute with the
// table's config to edit), the cron schedule with its previous and next fire times, the task
// config of OFFLINE and REALTIME tables alike, the minion metadata with watermarks as dates,
// the generator's recent errors, and the tasks with their subtasks by state, filterable.
import { api } from "./api.js";
import { el, clear, $, notify, errorText, confirmDialog, showDialog, simpleTable, formatTime, pageReady } from "./ui.js";
import { jsonEditor } from "./jsonedit.js";
import { PAGE, links, pinotTimeMs, shortTime, formatDuration, stateBadge, refreshEvery, fieldTable } from "./tasks_common.js";

const TYPE = PAGE.taskType;
const TABLE = PAGE.table;
const enc = encodeURIComponent;
const TABLE_TYPE = /_(OFFLINE|REALTIME)$/.exec(TABLE)?.[1];
let taskConfig = null;

function taskLink(name) {
  // break long names only after an underscore (<wbr>), never inside the uuid or the timestamp
  const parts = name.split("_").map((part, i, all) => (i < all.length - 1 ? [`${part}_`, el("wbr")] : part));
  return el("a", { href: links.task(TYPE, TABLE, name), class: "mono task-link" }, parts);
}

function showOutcome(kind, ...children) {
  const box = $("#schedule-result");
  box.hidden = false;
  clear(box, el("div", { class: "card-head" }, el("h2", {}, kind),
    el("button", { type: "button", class: "btn btn-small", onclick: () => (box.hidden = true) }, "Dismiss")), children);
}

async function scheduleNow() {
  const ok = await confirmDialog(`Schedule ${TYPE} on ${TABLE} now?`,
    "The generator runs now for this table and type; the tasks it makes go to the minions.", { confirmLabel: "Schedule" });
  if (!ok) return;
  const button = $("#schedule-now");
  button.disabled = true;
  try {
    const out = await api.post("/tasks/schedule", undefined, { taskType: TYPE, tableName: TABLE });
    const names = (out[TYPE] || "").split(",").filter(Boolean);
    const errors = [["Generation errors", out.generationErrors], ["Scheduling errors", out.schedulingErrors]].filter(([, text]) => text);
    showOutcome("Schedule now",
      names.length ? el("p", {}, `Scheduled ${names.length} task${names.length > 1 ? "s" : ""}: `, names.map((n) => [taskLink(n), " "]))
        : !errors.length ? el("p", { "data-testid": "nothing-to-schedule" }, "Nothing to schedule: the generator made no task (nothing new to do, or an earlier task is unfinished).") : "",
      errors.map(([label, text]) => el("div", { class: "alert alert-error" }, el("strong", {}, `${label}: `), text)));
  } catch (err) {
    showOutcome("Schedule now", el("div", { class: "alert alert-error" }, errorText(err)));
  } finally {
    button.disabled = false;
    loadTasks();
  }
}

function scheduleAdhoc() {
  const name = el("input", { type: "text", class: "wide", placeholder: "optional; a name is made otherwise", "aria-label": "Task name", "data-testid": "adhoc-name" });
  const box = el("div", { class: "json-box", "data-testid": "adhoc-configs" });
  const feedback = el("div", { class: "validation" });
  const run = el("button", { type: "button", class: "btn btn-primary", "data-testid": "adhoc-run" }, "Run ad hoc");
  const dialog = showDialog(`Ad hoc ${TYPE} on ${TABLE}`, el("div", {},
    el("p", { class: "muted" }, "Task configs (string values) override the table's config of this type for this run only."),
    el("label", { class: "field-inline" }, "Task name ", name), box, el("div", { class: "form-actions" }, run), feedback));
  const editor = jsonEditor(box, taskConfig || {});
  run.addEventListener("click", async () => {
    let configs;
    try {
      configs = editor.text().trim() ? editor.parse() : {};
      if (!configs || typeof configs !== "object" || Array.isArray(configs)) throw new Error("the task configs must be a JSON object");
    } catch (err) {
      feedback.className = "validation error";
      feedback.textContent = `Task configs: ${errorText(err)}`;
      return;
    }
    run.disabled = true;
    try {
      const out = await api.post("/tasks/execute", { taskType: TYPE, tableName: TABLE, taskName: name.value.trim() || undefined, taskConfigs: configs });
      dialog.close();
      const made = Object.values(out || {});
      showOutcome("Schedule ad hoc", made.length ? el("p", {}, "Ad-hoc task: ", made.map((n) => [taskLink(n), " "]))
        : el("div", { class: "alert alert-warn" }, `Nothing was run: the ${TYPE} queue is stopped. Resume it on the queue page.`));
      loadTasks();
    } catch (err) {
      feedback.className = "validation error";
      feedback.textContent = errorText(err);
    } finally {
      run.disabled = false;
    }
  });
}

async function loadCron() {
  try {
    const details = await api.get("/tasks/scheduler/jobDetails", { tableName: TABLE, taskType: TYPE });
    const trigger = (details.Triggers || [])[0] || {};
    clear($("#cron"), fieldTable([
      ["Cron schedule", el("span", { class: "mono", "data-testid": "cron-expression" }, trigger.CronExpression || "–")],
      ["Meaning", trigger.ExpressionSummary || "–"],
      ["Previous fire time", el("span", { "data-testid": "cron-previous" }, trigger.PreviousFireTime ? formatTime(trigger.PreviousFireTime) : "not fired yet")],
      ["Next fire time", el("span", { "data-testid": "cron-next" }, formatTime(trigger.NextFireTime))],
      ["Time zone", trigger.TimeZone || "–"],
    ], "cron-table"));
  } catch (err) {
    clear($("#cron"), el("p", { class: err.status === 404 ? "muted" : "error-text" },
      err.status === 404 ? "No cron schedule for this task type on this table. Tasks run when scheduled by hand or ad hoc." : errorText(err)));
  }
}

async function loadConfig() {
  try {
    const configs = await api.get(`/tables/${enc(TABLE)}`);
    const config = configs[TABLE_TYPE] || Object.values(configs)[0] || {};
    taskConfig = config.task?.taskTypeConfigsMap?.[TYPE] || null;
    const host = clear($("#task-config"));
    if (taskConfig) jsonEditor(host.appendChild(el("div", { class: "json-box" })), taskConfig, { readOnly: true });
    else host.append(el("p", { class: "muted" }, `${TYPE} is not in this table's task.taskTypeConfigsMap: it runs here only ad hoc.`));
  } catch (err) {
    clear($("#task-config"), el("p", { class: "error-text" }, errorText(err)));
  }
}

// Watermarks are epoch ms under names such as watermarkMs or <level>.watermarkMs.
function looksLikeEpochMs(key, value) {
  return /watermark|time|ms$/i.test(key) && /^\d{12,14}$/.test(String(value));
}

async function loadMetadata() {
  try {
    const record = await api.get(`/tasks/${enc(TYPE)}/${enc(TABLE)}/metadata`);
    const fields = Object.entries(record?.simpleFields || {});
    const maps = Object.entries(record?.mapFields || {});
    clear($("#metadata"), fields.length || maps.length ? [
      fields.length ? simpleTable([
        { label: "Key", render: ([k]) => el("span", { class: "mono" }, k) },
        { label: "Value", render: ([k, v]) => (looksLikeEpochMs(k, v)
          ? el("span", {}, el("span", { class: "mono" }, v), el("span", { class: "muted" }, ` = ${new Date(Number(v)).toISOString()}`))
          : el("span", { class: "mono" }, v)) },
      ], fields, { testid: "metadata-table" }) : "",
      maps.length ? el("details", {}, el("summary", {}, "Map fields"), el("pre", { class: "mono" }, JSON.stringify(Object.fromEntries(maps), null, 2))) : "",
    ] : el("p", { class: "muted" }, "No minion metadata: the generator keeps none for this table yet."));
  } catch (err) {
    clear($("#metadata"), el("p", { class: "error-text" }, errorText(err)));
  }
}

async function loadGenerator() {
  try {
    const [info = {}] = await api.get(`/tasks/generator/${enc(TABLE)}/${enc(TYPE)}/debug`);
    const errors = Object.entries(info.mostRecentErrorRunMessages || {}).reverse();
    const ok = [...(info.mostRecentSuccessRunTS || [])].reverse();
    clear($("#generator"),
      el("p", {}, "Last successful run: ", ok.length ? formatTime(Date.parse(ok[0])) : el("span", { class: "muted" }, "none on this controller since it started")),
      errors.length ? simpleTable([
        { label: "Failed at", class: "nowrap", render: ([at]) => formatTime(Date.parse(at)) },
        { label: "Error", render: ([, msg]) => el("span", { class: "error-text" }, msg) },
      ], errors, { testid: "generator-errors" }) : el("p", { class: "muted" }, "No scheduling errors."));
  } catch (err) {
    clear($("#generator"), el("p", { class: "error-text" }, errorText(err)));
  }
}

let tasks = [];

function renderTasks() {
  const filter = $("#state-filter");
  const wanted = filter.value;
  const states = [...new Set(tasks.map((t) => t.taskState))].sort();
  clear(filter, el("option", { value: "" }, `all (${tasks.length})`),
    states.map((s) => el("option", { value: s }, `${s} (${tasks.filter((t) => t.taskState === s).length})`)));
  filter.value = states.includes(wanted) ? wanted : "";
  const rows = tasks.filter((t) => !filter.value || t.taskState === filter.value);
  const count = (t, key) => String(t.subtaskCount?.[key] ?? 0);
  clear($("#task-list"), simpleTable([
    { label: "Task", render: (t) => taskLink(t.name) },
    { label: "State", render: (t) => stateBadge(t.taskState) },
    { label: "Trigger", class: "hide-narrow", render: (t) => t.triggeredBy || "–" },
    { label: "Start", class: "nowrap", render: (t) => shortTime(pinotTimeMs(t.startTime)) },
    { label: "Finish", class: "nowrap", render: (t) => shortTime(pinotTimeMs(t.finishTime)) },
    { label: "Duration", class: "nowrap", render: (t) => formatDuration(t.durationMs) },
    { label: "Subtasks", class: "nowrap", render: (t) => el("span", { class: "subtask-counts", title: "total · completed · running · waiting · error" },
      el("b", {}, count(t, "total")), " · ", el("span", { class: "c-good" }, count(t, "completed")), " · ", el("span", { class: "c-warn" }, count(t, "running")),
      " · ", el("span", {}, count(t, "waiting")), " · ", el("span", { class: "c-bad" }, count(t, "error"))) },
  ], rows, { empty: tasks.length ? "No task in this state." : `No ${TYPE} task has run on ${TABLE}.`, testid: "tasks-table" }));
}

async function loadTasks() {
  try {
    const debug = await api.get(`/tasks/${enc(TYPE)}/${enc(TABLE)}/debug`, { verbosity: 0 });
    const now = Date.now();
    tasks = Object.entries(debug || {}).map(([name, info]) => {
      const start = pinotTimeMs(info.executionStartTime || info.startTime);
      const finish = pinotTimeMs(info.finishTime);
      return { name, ...info, durationMs: start ? (finish || now) - start : null };
    }).sort((a, b) => (pinotTimeMs(b.startTime) || 0) - (pinotTimeMs(a.startTime) || 0) || b.name.localeCompare(a.name));
  } catch (err) {
    if (err.status !== 404) {
      clear($("#task-list"), el("p", { class: "error-text" }, errorText(err)));
      return;
    }
    tasks = []; // no queue for the type yet
  }
  renderTasks();
}

$("#schedule-now").addEventListener("click", scheduleNow);
$("#schedule-adhoc").addEventListener("click", scheduleAdhoc);
$("#state-filter").addEventListener("change", renderTasks);
if (!TABLE_TYPE) notify(`${TABLE} has no _OFFLINE or _REALTIME suffix: task pages are per table type.`, "error");
loadConfig();
refreshEvery(() => Promise.all([loadTasks(), loadCron(), loadMetadata(), loadGenerator()]));
pageReady();
