// Kafka consumers: every group with state, members, total lag and Burrow status
// (GET /consumerGroups), the alert rules (with a form to add one) and the recent alerts.
import { api } from "./api.js";
import { el, clear, $, errorText, simpleTable, pageReady } from "./ui.js";
import { statusBadge, known, groupUrl, loadRules, addRule, loadEvents } from "./consumers_common.js";

const REFRESH_MS = 15000;

async function loadGroups() {
  const host = $("#groups");
  try {
    const { groups } = await api.get("/consumerGroups");
    const missing = groups.find((g) => g.historyError);
    clear(host,
      missing ? el("p", { class: "muted", "data-testid": "history-error" }, missing.historyError) : null,
      simpleTable([
        { label: "Group", render: (g) => el("a", { href: groupUrl(g.group), "data-group": g.group }, g.group) },
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

async function refresh() {
  await Promise.all([loadGroups(), loadRules(), loadEvents()]);
}

$("#rule-form").addEventListener("submit", addRule);
refresh().finally(pageReady);
setInterval(refresh, REFRESH_MS);
