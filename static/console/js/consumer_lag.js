// Kafka consumer lag: groups with Burrow status (GET /consumerGroups), one group's partitions
// (GET /consumerGroups/{group}) with its lag per minute from the consumer_offsets table
// (GET /consumerGroups/{group}/lagHistory), and the alert rules and events.
import { Chart } from "../vendor/chart.js";
import { api } from "./api.js";
import { el, clear, $, notify, errorText, formatTime, badge, simpleTable, confirmDialog, pageReady } from "./ui.js";

const REFRESH_MS = 15000;
let selected = JSON.parse(document.getElementById("selected-group").textContent || '""');
let chart = null;

// Burrow's codes as the console's badges; a partition without a commit is unknown, not OK.
function statusBadge(status) {
  if (!status) return badge("unknown", "disabled");
  const kind = { OK: "ok", WARN: "warn" }[status] || "error";
  return badge(status, kind);
}

const known = (value) => (value === null || value === undefined ? "–" : String(value));

async function loadGroups() {
  const host = $("#groups");
  try {
    const { groups } = await api.get("/consumerGroups");
    const missing = groups.find((g) => g.historyError);
    clear(host,
      missing ? el("p", { class: "muted", "data-testid": "history-error" }, missing.historyError) : null,
      simpleTable([
        { label: "Group", render: (g) => el("a", { href: `?group=${encodeURIComponent(g.group)}`, "data-group": g.group, onclick: (e) => { e.preventDefault(); select(g.group); } }, g.group) },
        { label: "State", render: (g) => g.state },
        { label: "Members", render: (g) => String(g.members), class: "num" },
        { label: "Partitions", render: (g) => String(g.partitionCount), class: "num" },
        { label: "Total lag", render: (g) => known(g.totalLag), class: "num" },
        { label: "Status", render: (g) => statusBadge(g.status) },
      ], groups, { empty: "No consumer groups in this Kafka cluster.", testid: "groups-table" }));
  } catch (err) {
    clear(host, el("p", { class: "empty", "data-testid": "groups-error" }, errorText(err)));
  }
}

async function loadGroup() {
  if (!selected) return;
  $("#group-card").hidden = false;
  $("#group-title").textContent = `Group ${selected}`;
  try {
    const group = await api.get(`/consumerGroups/${encodeURIComponent(selected)}`);
    clear($("#partitions"),
      el("p", {}, `State ${group.state}, ${group.members} member(s), total lag ${known(group.totalLag)}, status `, statusBadge(group.status)),
      simpleTable([
        { label: "Topic", render: (p) => p.topic },
        { label: "Partition", render: (p) => String(p.partition), class: "num" },
        { label: "Committed", render: (p) => known(p.committed), class: "num" },
        { label: "End offset", render: (p) => known(p.endOffset), class: "num" },
        { label: "Lag", render: (p) => known(p.lag), class: "num" },
        { label: "Status", render: (p) => statusBadge(p.status) },
        { label: "Consumer", render: (p) => known(p.consumerId) },
      ], group.partitions, { empty: "No partition is assigned or committed.", testid: "partitions-table" }));
  } catch (err) {
    clear($("#partitions"), el("p", { class: "empty" }, errorText(err)));
  }
  await loadChart();
}

async function loadChart() {
  const minutes = $("#history-minutes").value;
  try {
    const { series } = await api.get(`/consumerGroups/${encodeURIComponent(selected)}/lagHistory`, { minutes });
    const names = Object.keys(series).sort();
    const stamps = [...new Set(names.flatMap((n) => series[n].map((p) => p.minute)))].sort((a, b) => a - b);
    $("#chart-note").textContent = stamps.length ? `${names.length} partition(s), ${stamps.length} minute(s) sampled` : "No samples in this period yet.";
    const datasets = names.map((name) => {
      const byMinute = new Map(series[name].map((p) => [p.minute, p.lag]));
      return { label: name, data: stamps.map((m) => (byMinute.has(m) ? byMinute.get(m) : null)), spanGaps: false, tension: 0.2 };
    });
    const labels = stamps.map((m) => new Date(m).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }));
    if (chart) chart.destroy();
    chart = new Chart($("#lag-chart"), {
      type: "line",
      data: { labels, datasets },
      options: { animation: false, maintainAspectRatio: false, scales: { y: { beginAtZero: true, title: { display: true, text: "lag (messages)" } } } },
    });
  } catch (err) {
    $("#chart-note").textContent = `Lag history unavailable: ${errorText(err)}`;
  }
}

function select(group) {
  selected = group;
  history.replaceState(null, "", `?group=${encodeURIComponent(group)}`);
  loadGroup();
}

async function loadRules() {
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

async function addRule(event) {
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

async function loadEvents() {
  try {
    const { events } = await api.get("/consumerLagAlerts/events", { limit: 50 });
    clear($("#events"), simpleTable([
      { label: "When", render: (e) => formatTime(e.atMs) },
      { label: "Rule", render: (e) => e.rule },
      { label: "Group", render: (e) => e.group },
      { label: "State", render: (e) => badge(e.state, e.state === "firing" ? "error" : "ok") },
      { label: "Detail", render: (e) => e.detail },
      { label: "Webhook", render: (e) => (e.deliveryError ? badge(e.deliveryError, "error") : "–") },
    ], events, { empty: "No alert has fired yet.", testid: "events-table" }));
  } catch (err) {
    clear($("#events"), el("p", { class: "empty" }, errorText(err)));
  }
}

async function refresh() {
  await Promise.all([loadGroups(), loadGroup(), loadRules(), loadEvents()]);
}

$("#rule-form").addEventListener("submit", addRule);
$("#history-minutes").addEventListener("change", loadChart);
refresh().finally(pageReady);
setInterval(refresh, REFRESH_MS);
