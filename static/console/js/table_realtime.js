// Real-time ingestion on the table page of a REALTIME table: one row per stream partition with
// its CONSUMING segment (servers and their state, start offset, consuming since) and what it
// has committed (segments, rows, the last end offset), refreshed every 5 s.
// Current offset, latest upstream offset and the lags come from the controller's
// /tables/{t}/consumingSegmentsInfo once it answers; until then those cells say so. Each
// refresh also adds a sample to the live chart of ingestion rate and lag per partition, and
// reads the pause status that the Pause / Resume / Force commit buttons act on.
import { api } from "./api.js";
import { el, clear, $, badge, errorText } from "./ui.js";
import { formatDuration, refreshEvery } from "./tasks_common.js";
import { IngestionChart } from "./table_realtime_chart.js";
import { RealtimeOps } from "./table_realtime_ops.js";

const TABLE = document.body.dataset.table;
const RAW = TABLE.replace(/_(OFFLINE|REALTIME)$/, "");
const PATH = `/tables/${encodeURIComponent(RAW)}`;
const STATUS = "segment.realtime.status";
// null until asked; false once the controller answers 404 (no such endpoint there)
let consumingInfoServed = null;
const chart = new IngestionChart(TABLE);
let ops = null;

// Pinot's LLC name: table__partition__sequence__creationTime; anything else is not an LLC
// segment (an uploaded one) and has no partition here.
function llc(name) {
  const parts = name.split("__");
  if (parts.length !== 4 || !/^\d+$/.test(parts[1]) || !/^\d+$/.test(parts[2])) return null;
  return { partition: Number(parts[1]), sequence: Number(parts[2]) };
}

async function consumingInfo() {
  if (consumingInfoServed === false) return null;
  try {
    const out = await api.get(`${PATH}/consumingSegmentsInfo`);
    consumingInfoServed = true;
    return out;
  } catch (err) {
    if (err.status === 404 || err.status === 405) consumingInfoServed = false;
    return null;
  }
}

export function partitionRows(ideal, view, zk, info) {
  const byPartition = new Map();
  const row = (p) => byPartition.get(p) || byPartition.set(p, { partition: p, consuming: [], committed: 0, rows: 0, last: null }).get(p);
  for (const [segment, meta] of Object.entries(zk || {})) {
    const name = llc(segment);
    if (!name) continue;
    const r = row(name.partition);
    if (meta[STATUS] === "IN_PROGRESS") {
      r.consuming.push({ segment, sequence: name.sequence, meta, ideal: (ideal || {})[segment] || {}, view: (view || {})[segment] || {},
        infos: ((info || {})._segmentToConsumingInfoMap || {})[segment] || [] });
    } else {
      r.committed += 1;
      r.rows += Number(meta["segment.total.docs"] || 0);
      if (!r.last || name.sequence > r.last.sequence) r.last = { segment, sequence: name.sequence, meta };
    }
  }
  return [...byPartition.values()].sort((a, b) => a.partition - b.partition);
}

function offsetCell(c, key) {
  if (!consumingInfoServed) return el("span", { class: "muted" }, "–");
  const values = c.infos.map((i) => ((i.partitionOffsetInfo || {})[key] || {})[String(c.partition)]).filter((v) => v !== undefined);
  return values.length ? values.join(" / ") : el("span", { class: "muted" }, "–");
}

// a replica whose server reports the partition stalled (no progress while the topic grows)
function stalled(c, now) {
  const reports = c.infos.filter((i) => i.stalled);
  if (!reports.length) return null;
  const since = Math.min(...reports.map((i) => Number(i.stalledSinceMs || now)));
  const who = reports.map((i) => i.serverName).join(", ");
  return el("span", { title: `no progress while the topic grows, on ${who}; its consumer is being recreated`, "data-testid": "stalled" },
    " ", badge(`stalled ${formatDuration(now - since)}`, "error"));
}

function servers(c) {
  const names = Object.keys({ ...c.ideal, ...c.view }).sort();
  if (!names.length) return el("span", { class: "error-text" }, "no replica");
  return el("div", { class: "replicas" }, names.map((s) =>
    el("span", { class: "replica" }, el("span", { class: "mono" }, s), " ", badge(c.view[s] || "not loaded", (c.view[s] || "warn").toLowerCase()))));
}

// shown only when the controller serves consumingSegmentsInfo (columns of dashes say nothing)
// below 980 px these give way, so the offsets and lags fit at 800 px
const NARROW_HIDDEN = new Set(["Consuming for", "Committed rows", "Last commit end offset"]);
const LIVE_HEADERS = ["Current offset", "Latest upstream", "Records lag", "Availability lag (ms)"];

function render(partitions, now) {
  const host = $("#realtime-partitions");
  if (!partitions.length) {
    clear(host, el("p", { class: "empty" }, "No segments yet: the controller creates a CONSUMING segment per partition once the topic exists."));
    return;
  }
  const lines = [];
  for (const p of partitions) {
    const consuming = p.consuming.length ? p.consuming : [null];
    for (const c of consuming) {
      if (c) c.partition = p.partition;
      const since = c ? Number(c.meta["segment.creation.time"] || 0) : 0;
      const lastEnd = p.last ? p.last.meta["segment.realtime.endOffset"] : null;
      lines.push(el("tr", { "data-partition": String(p.partition) },
        el("td", { class: "num" }, String(p.partition)),
        el("td", {}, c ? [el("span", { class: "mono task-link", title: c.segment }, `#${c.sequence}`), stalled(c, now)] : el("span", { class: "muted" }, "none")),
        el("td", {}, c ? servers(c) : "–"),
        el("td", { class: "num", "data-col": "start-offset" }, c ? String(c.meta["segment.realtime.startOffset"] ?? "–") : "–"),
        consumingInfoServed ? [
          el("td", { class: "num", "data-col": "current-offset" }, c ? offsetCell(c, "currentOffsetsMap") : "–"),
          el("td", { class: "num" }, c ? offsetCell(c, "latestUpstreamOffsetMap") : "–"),
          el("td", { class: "num" }, c ? offsetCell(c, "recordsLagMap") : "–"),
          el("td", { class: "num" }, c ? offsetCell(c, "availabilityLagMsMap") : "–")] : [],
        el("td", { class: "nowrap hide-narrow", "data-col": "since" }, since ? `${formatDuration(now - since)} ago` : "–"),
        el("td", { class: "num", "data-col": "committed" }, String(p.committed)),
        el("td", { class: "num hide-narrow", "data-col": "committed-rows" }, String(p.rows)),
        el("td", { class: "num hide-narrow", "data-col": "last-commit" }, p.last ? String(lastEnd ?? "–") : el("span", { class: "muted" }, "none yet"))));
    }
  }
  clear(host, el("div", { class: "table-wrap" }, el("table", { class: "data realtime", "data-testid": "realtime-partitions" },
    el("thead", {}, el("tr", {}, ["Partition", "Consuming", "Servers", "Start offset", ...(consumingInfoServed ? LIVE_HEADERS : []), "Consuming for", "Committed", "Committed rows", "Last commit end offset"]
      .map((h) => el("th", { class: NARROW_HIDDEN.has(h) ? "hide-narrow" : undefined }, h)))),
    el("tbody", {}, lines))));
}

async function load() {
  const status = $("#realtime-status");
  try {
    const [ideal, view, zk, info] = await Promise.all([
      api.get(`${PATH}/idealstate`), api.get(`${PATH}/externalview`),
      api.get(`/segments/${encodeURIComponent(RAW)}_REALTIME/zkmetadata`), consumingInfo(),
      ops.loadStatus(),
    ]);
    render(partitionRows((ideal || {}).REALTIME, (view || {}).REALTIME, zk, info), Date.now());
    if (info) chart.add(info);
    $("#rt-chart").hidden = !consumingInfoServed;
    if (consumingInfoServed) chart.render();
    clear(status, consumingInfoServed ? `Offsets and lags from consumingSegmentsInfo${info && info.serversFailingToRespond ? `; ${info.serversFailingToRespond} server(s) did not answer` : ""}.`
      : "This controller serves no /tables/{t}/consumingSegmentsInfo, so current offsets and lags are not shown; start offsets, commits and rows are read from ZooKeeper.");
  } catch (err) {
    clear(status, el("span", { class: "error-text" }, `Could not read real-time state: ${errorText(err)}`));
  }
}

async function init() {
  let configs;
  try {
    configs = await api.get(PATH);
  } catch {
    return; // the table page itself reports a missing table
  }
  if (!configs || !configs.REALTIME) return;
  const stream = ((configs.REALTIME.tableIndexConfig || {}).streamConfigs) || {};
  const topic = stream["stream.kafka.topic.name"] || "";
  $("#realtime").hidden = false;
  clear($("#realtime-topic"), topic ? `topic ${topic}` : "");
  let refresh = null;
  ops = new RealtimeOps(RAW, () => refresh && refresh());
  ops.bind();
  refresh = refreshEvery(load);
}

init();
