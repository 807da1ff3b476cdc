// What the consumer pages share: Burrow's statuses as badges, unknown values, the alert rules
// (GET/POST/DELETE /consumerLagAlerts/rules) and the alert events (GET /consumerLagAlerts/events).
import { api } from "./api.js";
import { el, clear, $, notify, errorText, formatTime, badge, simpleTable, confirmDialog } from "./ui.js";

// A partition without a commit is unknown, not OK.
export function statusBadge(status) {
  if (!status) return badge("unknown", "disabled");
  const kind = { OK: "ok", WARN: "warn" }[status] || "error";
  return badge(status, kind);
}

export const known = (value) => (value === null || value === undefined || value === "" ? "–" : String(value));

export const groupUrl = (group) => `/console/consumers/${encodeURIComponent(group)}`;

export async function loadRules() {
  try {
    const { rules } = await api.get("/consumerLagAlerts/rules");
    clear($("#rules"), simpleTable([
      { label: "Name", render: (r) => r.name },
      { label: "Groups", render: (r) => r.groupPattern },
      { label: "Condition", render: (r) => r.condition },
      { label: "For", render: (r) => `${r.durationSeconds} s` },
      { label: "Webhook", render: (r) => known(r.webhookUrl) },
      { label: "Firing", render: (r) => (r.firingGroups.length ? badge(r.firingGroups.join(", "), "error") : badge("no", "ok")) },
      { label: "", render: (r) => el("button", { type: "button", class: "btn btn-small btn-danger", "data-delete": r.name, onclick: () => removeRule(r.name) }, "Delete") },
    ], rules, { empty: "No alert rules yet.", testid: "rules-table" }));
  } catch (err) {
    clear($("#rules"), el("p", { class: "empty" }, errorText(err)));
  }
}

async function removeRule(name) {
  if (!(await confirmDialog("Delete alert rule", `Delete the rule ${name}? Its past alerts stay listed.`, { confirmLabel: "Delete", danger: true }))) return;
  try {
    await api.del(`/consumerLagAlerts/rules/${encodeURIComponent(name)}`);
    notify(`Alert rule ${name} deleted.`, "ok");
  } catch (err) {
    notify(errorText(err), "error");
  }
  loadRules();
}

export async function addRule(event) {
  event.preventDefault();
  const form = event.target;
  const body = Object.fromEntries(new FormData(form).entries());
  try {
    await api.post("/consumerLagAlerts/rules", body);
    notify(`Alert rule ${body.name} added.`, "ok");
    form.reset();
  } catch (err) {
    notify(errorText(err), "error");
  }
  loadRules();
}

// The newest alerts, or only one group's when `group` is given.
export async function loadEvents(group = null) {
  try {
    const { events } = await api.get("/consumerLagAlerts/events", { limit: group ? 500 : 50 });
    const shown = group ? events.filter((e) => e.group === group).slice(0, 50) : events;
    clear($("#events"), simpleTable([
      { label: "When", render: (e) => formatTime(e.atMs) },
      { label: "Rule", render: (e) => e.rule },
      { label: "Group", render: (e) => el("a", { href: groupUrl(e.group) }, e.group) },
      { label: "State", render: (e) => badge(e.state, e.state === "firing" ? "error" : "ok") },
      { label: "Detail", render: (e) => e.detail },
      { label: "Webhook", render: (e) => (e.deliveryError ? badge(e.deliveryError, "error") : "–") },
    ], shown, { empty: "No alert has fired yet.", testid: "events-table" }));
  } catch (err) {
    clear($("#events"), el("p", { class: "empty" }, errorText(err)));
  }
}
