// The real-time panel's live chart: ingestion rate (rows/s) and records lag per partition over
// the last 15 minutes. Each refresh of the panel adds one sample taken from consumingSegmentsInfo
// (per partition, the replica furthest along); the samples live in the browser, in
// sessionStorage per table, so a reload of the page keeps its last 15 minutes.
// The rate is the growth of the current offset between two samples, so it spans commits (a
// stream offset keeps counting across segments); a drop (a resume from smallest) is no rate.
import { Chart } from "../vendor/chart.js";
import { $ } from "./ui.js";

export const WINDOW_MS = 15 * 60 * 1000;

// "NOT_CALCULATED" and the like are no number
function num(value) {
  const n = Number(value);
  return value === null || value === undefined || value === "" || Number.isNaN(n) ? null : n;
}

// One sample from a consumingSegmentsInfo answer: {t, partitions: {p: {offset, lag, lagMs}}}.
export function sampleOf(info, t) {
  const partitions = {};
  for (const replicas of Object.values((info || {})._segmentToConsumingInfoMap || {})) {
    for (const replica of replicas) {
      const offsets = replica.partitionOffsetInfo || {};
      for (const [p, raw] of Object.entries(offsets.currentOffsetsMap || {})) {
        const offset = num(raw);
        if (offset === null) continue;
        const seen = partitions[p];
        if (seen && seen.offset >= offset) continue;
        partitions[p] = { offset, lag: num((offsets.recordsLagMap || {})[p]), lagMs: num((offsets.availabilityLagMsMap || {})[p]) };
      }
    }
  }
  return { t, partitions };
}

// Per partition, [t, rows/s] between consecutive samples that both have the partition.
export function rates(samples) {
  const out = {};
  for (let i = 1; i < samples.length; i += 1) {
    const [a, b] = [samples[i - 1], samples[i]];
    const seconds = (b.t - a.t) / 1000;
    for (const [p, now] of Object.entries(b.partitions)) {
      const before = a.partitions[p];
      (out[p] ||= []).push([b.t, before && seconds > 0 && now.offset >= before.offset ? (now.offset - before.offset) / seconds : null]);
    }
  }
  return out;
}

export class IngestionChart {
  constructor(table) {
    this.key = `sprig.realtime.samples.${table}`;
    this.samples = this.restore();
    this.charts = {};
  }

  restore() {
    try {
      const kept = JSON.parse(sessionStorage.getItem(this.key) || "[]");
      return Array.isArray(kept) ? kept.filter((s) => s && s.t > Date.now() - WINDOW_MS) : [];
    } catch {
      return [];
    }
  }

  add(info, t = Date.now()) {
    const sample = sampleOf(info, t);
    if (!Object.keys(sample.partitions).length) return;
    this.samples = [...this.samples.filter((s) => s.t > t - WINDOW_MS), sample];
    try {
      sessionStorage.setItem(this.key, JSON.stringify(this.samples));
    } catch {
      // a full sessionStorage costs only the reload's history, never the live chart
    }
  }

  render() {
    const note = $("#rt-chart-note");
    const parts = [...new Set(this.samples.flatMap((s) => Object.keys(s.partitions)))].sort((a, b) => Number(a) - Number(b));
    if (this.samples.length < 2) {
      note.textContent = "Sampling every 5 s: the rate needs two samples.";
    } else {
      const minutes = ((this.samples.at(-1).t - this.samples[0].t) / 60000).toFixed(1);
      note.textContent = `${parts.length} partition(s), ${this.samples.length} samples over ${minutes} min (at most 15), taken by this page`;
    }
    const labels = this.samples.map((s) => new Date(s.t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" }));
    const rateBy = rates(this.samples);
    const rateSets = parts.map((p) => {
      const byT = new Map((rateBy[p] || []).map(([t, v]) => [t, v]));
      return { label: `partition ${p}`, data: this.samples.map((s) => (byT.has(s.t) ? byT.get(s.t) : null)), tension: 0.2, spanGaps: false };
    });
    const lagSets = parts.map((p) => ({ label: `partition ${p}`, data: this.samples.map((s) => (s.partitions[p] ? s.partitions[p].lag : null)), tension: 0.2, spanGaps: false }));
    this.draw("rate", "#rt-rate-chart", labels, rateSets, "rows/s");
    this.draw("lag", "#rt-lag-chart", labels, lagSets, "records lag");
    const canvas = $("#rt-rate-chart");
    canvas.dataset.samples = String(this.samples.length);
    canvas.dataset.lastRate = JSON.stringify(Object.fromEntries(rateSets.map((d, i) => [parts[i], d.data.at(-1)])));
  }

  draw(name, selector, labels, datasets, axis) {
    const chart = this.charts[name];
    if (chart) {
      chart.data.labels = labels;
      chart.data.datasets = datasets;
      chart.update("none");
      return;
    }
    this.charts[name] = new Chart($(selector), {
      type: "line",
      data: { labels, datasets },
      options: { animation: false, maintainAspectRatio: false, plugins: { legend: { position: "bottom" } },
        scales: { x: { ticks: { maxTicksLimit: 8 } }, y: { beginAtZero: true, title: { display: true, text: axis } } } },
    });
  }
}
