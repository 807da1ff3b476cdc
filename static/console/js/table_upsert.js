// Upsert and dedup on the table page of a REALTIME table that has either: the mode and its
// effective settings (Pinot's defaults filled in by the controller), primary keys per
// partition and server, and, for upsert, each completed segment's valid and invalid docs with
// what UpsertCompactionTask's thresholds make of it. All from the controller's
// /tables/{t}/upsertSummary, which asks the servers; refreshed every 5 s.
import { api } from "./api.js";
import { el, clear, $, badge, errorText, simpleTable } from "./ui.js";
import { refreshEvery } from "./tasks_common.js";

const TABLE = document.body.dataset.table;
const RAW = TABLE.replace(/_(OFFLINE|REALTIME)$/, "");
const SUMMARY = `/tables/${encodeURIComponent(RAW)}/upsertSummary`;

function shown(value) {
  if (value === null || value === undefined || value === "") return el("span", { class: "muted" }, "none");
  if (Array.isArray(value)) return value.length ? value.join(", ") : el("span", { class: "muted" }, "none");
  if (typeof value === "object") {
    const pairs = Object.entries(value);
    return pairs.length ? pairs.map(([k, v]) => `${k}: ${v}`).join(", ") : el("span", { class: "muted" }, "none");
  }
  return String(value);
}

function settings(summary) {
  const config = summary.config || {};
  const title = summary.kind === "dedup" ? "DEDUP" : `${config.mode} upsert`;
  return el("div", { class: "upsert-settings" },
    el("p", {}, badge(title, "ok"), " ", el("span", { class: "muted" }, "effective settings (Pinot's defaults where the config says nothing)")),
    el("dl", { class: "kv", "data-testid": "upsert-settings" }, Object.entries(config).flatMap(([key, value]) =>
      [el("dt", { class: "mono" }, key), el("dd", { "data-key": key }, shown(value))])));
}

function keyCounts(counts) {
  const rows = Object.entries(counts || {}).map(([partition, servers]) => ({ partition, servers }));
  return simpleTable([
    { label: "Partition", class: "num", render: (r) => r.partition },
    { label: "Primary keys", class: "num", render: (r) => el("span", { "data-testid": "pk-count" }, String(Math.max(0, ...Object.values(r.servers)))) },
    { label: "Per server", render: (r) => Object.entries(r.servers).map(([s, n]) => `${s}: ${n}`).join(", ") },
  ], rows, { empty: "No server holds primary keys of this table yet.", testid: "upsert-key-counts" });
}

const VERDICT = { COMPACT: ["due for compaction", "warn"], DELETE: ["all invalid: deleted by the task", "error"], KEEP: ["below the thresholds", "ok"] };
// all invalid but its partition's newest completed segment: the task keeps it (its end offset
// is where the partition's next segment starts)
const KEPT_NEWEST = ["all invalid, kept: the partition's newest", "ok"];
const verdictBadge = (s) => badge(...(s.verdict === "KEEP" && s.newestOfPartition && s.totalValidDocs === 0 ? KEPT_NEWEST : VERDICT[s.verdict]));

function compaction(c) {
  if (c.configError) return el("p", { class: "error-text" }, `UpsertCompactionTask config: ${c.configError}`);
  const source = c.taskConfigured ? "the table's UpsertCompactionTask" : "Pinot's defaults (the table has no UpsertCompactionTask)";
  const due = c.segments.filter((s) => s.verdict === "COMPACT" || s.verdict === "DELETE").length;
  return [
    el("p", { class: "small", "data-testid": "upsert-thresholds" },
      `Thresholds from ${source}: invalid records ≥ ${c.invalidRecordsThresholdPercent}% and ≥ ${c.invalidRecordsThresholdCount}; `,
      `counts from ${c.validDocIdsType} valid docs. `, el("strong", { "data-testid": "upsert-due-count" }, `${due} of ${c.segments.length}`), " completed segments due."),
    simpleTable([
      { label: "Segment", render: (s) => el("span", { class: "mono" }, s.segmentName) },
      { label: "Partition", class: "num", render: (s) => (s.partition ?? "–").toString() },
      { label: "Total docs", class: "num", render: (s) => String(s.totalDocs) },
      { label: "Valid docs", class: "num", render: (s) => String(s.totalValidDocs) },
      { label: "Invalid %", class: "num", render: (s) => s.invalidPercent.toFixed(1) },
      { label: "Compaction", render: (s) => s.replicasAgree ? verdictBadge(s) : badge("replicas disagree: left alone", "warn") },
    ], c.segments, { empty: "No completed segment has valid-doc counts yet (they come once a segment commits).", testid: "upsert-segments" }),
  ];
}

function render(summary) {
  const errors = Object.entries(summary.serverErrors || {});
  clear($("#upsert-body"),
    settings(summary),
    el("h3", {}, "Primary keys per partition"), keyCounts(summary.primaryKeyCounts),
    summary.compaction ? [el("h3", {}, "Segments and compaction"), compaction(summary.compaction)] : [],
    errors.length ? el("p", { class: "error-text small" }, `Servers that did not answer: ${errors.map(([s, why]) => `${s} (${why})`).join(", ")}`) : []);
}

async function load() {
  let summary;
  try {
    summary = await api.get(SUMMARY);
  } catch (err) {
    if (err.status === 404 || err.status === 400) return false; // no such table, or OFFLINE
    clear($("#upsert-body"), el("p", { class: "error-text" }, `Could not read the upsert state: ${errorText(err)}`));
    return;
  }
  if (!summary.kind) {
    if (summary.configError) {
      $("#upsert").hidden = false;
      clear($("#upsert-body"), el("p", { class: "error-text" }, summary.configError));
    }
    return false;
  }
  $("#upsert").hidden = false;
  clear($("#upsert-title"), summary.kind === "dedup" ? "Dedup" : "Upsert");
  render(summary);
}

refreshEvery(load);
