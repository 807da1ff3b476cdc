// One consumer group: kafka-consumer-groups' describe table (GET /consumerGroups/{group}) with
// Burrow's status per partition, each partition's lag per minute read from the consumer_offsets
// table with SQL (GET /consumerGroups/{group}/lagHistory), and the group's alerts.
import { Chart } from "../vendor/chart.js";
import { api } from "./api.js";
import { el, clear, $, errorText, simpleTable, pageReady } from "./ui.js";
import { statusBadge, known, loadRules, loadEvents } from "./consumers_common.js";

const REFRESH_MS = 15000;
const group = JSON.parse(document.getElementById("group-id").textContent);
let chart = null;

async function loadGroup() {
  try {
    const g = await api.get(`/consumerGroups/${encodeURIComponent(group)}`);
    clear($("#summary"),
      el("p", { "data-testid": "group-summary" }, `State ${g.state}, ${g.members} member(s), total lag ${known(g.totalLag)}, status `, statusBadge(g.status)),
      g.historyError ? el("p", { class: "muted" }, g.historyError) : null);
    clear($("#partitions"), simpleTable([
      { label: "Topic", render: (p) => p.topic },
      { label: "Partition", render: (p) => String(p.partition), class: "num" },
      { label: "Current offset", render: (p) => known(p.committed), class: "num" },
      { label: "Log-end offset", render: (p) => known(p.endOffset), class: "num" },
      { label: "Lag", render: (p) => known(p.lag), class: "num" },
      { label: "Consumer-ID", render: (p) => known(p.consumerId) },
      { label: "Host", render: (p) => known(p.host) },
      { label: "Client-ID", render: (p) => known(p.clientId) },
      { label: "Status", render: (p) => statusBadge(p.status) },
    ], g.partitions, { empty: "No partition is assigned or committed.", testid: "partitions-table" }));
  } catch (err) {
    clear($("#summary"), el("p", { class: "empty", "data-testid": "group-error" }, errorText(err)));
    clear($("#partitions"));
  }
}

async function loadChart() {
  const minutes = $("#history-minutes").value;
  try {
    const { series } = await api.get(`/consumerGroups/${encodeURIComponent(group)}/lagHistory`, { minutes });
    const names = Object.keys(series).sort();
    const stamps = [...new Set(names.flatMap((n) => series[n].map((p) => p.minute)))].sort((a, b) => a - b);
    $("#chart-note").textContent = stamps.length ? `${names.length} partition(s), ${stamps.length} minute(s) sampled` : "No samples in this period yet.";
    const datasets = names.map((name) => {
      const byMinute = new Map(series[name].map((p) => [p.minute, p.lag]));
      // a minute without a sample, or whose lag was unknown, is a gap, never 0
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

async function refresh() {
  await Promise.all([loadGroup(), loadChart(), loadRules(), loadEvents(group)]);
}

$("#history-minutes").addEventListener("change", loadChart);
refresh().finally(pageReady);
setInterval(refresh, REFRESH_MS);
