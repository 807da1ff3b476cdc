// One subtask: state, times, minion and trigger, its task config, and its error in full, read
// from the task's debug info (GET /tasks/task/<task>/debug?verbosity=1); refreshed every 5 s
// until the subtask is done.
import { api } from "./api.js";
import { el, clear, $, errorText, pageReady } from "./ui.js";
import { jsonEditor } from "./jsonedit.js";
import { PAGE, links, pinotTimeMs, shortTime, stateBadge, errorHeadline, refreshEvery, fieldTable } from "./tasks_common.js";
import { secondsDuration } from "./task_times.js";

const DONE = new Set(["COMPLETED", "TASK_ERROR", "ERROR", "TIMED_OUT", "TASK_ABORTED", "ABORTED", "DROPPED"]);
let configShown = false;

function render(task, subtask) {
  const start = pinotTimeMs(subtask.startTime);
  const finish = pinotTimeMs(subtask.finishTime);
  clear($("#subtask-fields"), fieldTable([
    ["Status", stateBadge(subtask.state)],
    ["Task", el("a", { href: links.task(PAGE.taskType, PAGE.table, PAGE.task), class: "mono task-link" }, PAGE.task)],
    ["Task status", stateBadge(task.taskState)],
    ["Start", shortTime(start)],
    ["Finish", shortTime(finish)],
    ["Duration", start && finish ? secondsDuration(finish - start) : start ? `${secondsDuration(Date.now() - start)} so far` : "–"],
    ["Minion", subtask.participant ? el("span", { class: "mono" }, subtask.participant) : el("span", { class: "muted" }, "not taken by a minion yet")],
    ["Triggered by", subtask.triggeredBy || "–"],
  ], "subtask-fields-table"));
  const error = $("#subtask-error");
  error.hidden = !subtask.info;
  if (subtask.info) {
    clear(error, el("div", { class: "card-head" }, el("h2", { class: "error-text" }, "Error"),
      el("span", { class: "muted" }, "as the minion reported it (the API keeps the first 1000 characters)")),
    el("p", { class: "error-text", "data-testid": "subtask-error-line" }, errorHeadline(subtask.info)),
    el("pre", { class: "subtask-error-full" }, subtask.info));
  }
  if (!configShown) {
    configShown = true;
    const box = el("div", { class: "json-box" });
    clear($("#subtask-config"), box);
    jsonEditor(box, subtask.taskConfig || {}, { readOnly: true });
  }
}

async function load() {
  try {
    const task = await api.get(`/tasks/task/${encodeURIComponent(PAGE.task)}/debug`, { verbosity: 1 });
    const subtask = (task.subtaskInfos || []).find((s) => s.taskId === PAGE.subtask);
    if (!subtask) {
      clear($("#subtask-fields"), el("div", { class: "alert alert-error", role: "alert" }, `Task ${PAGE.task} has no subtask ${PAGE.subtask}.`));
      return false;
    }
    render(task, subtask);
    return !DONE.has(subtask.state);
  } catch (err) {
    clear($("#subtask-fields"), el("div", { class: "alert alert-error", role: "alert" }, errorText(err)));
    return false;
  }
}

refreshEvery(load);
pageReady();
