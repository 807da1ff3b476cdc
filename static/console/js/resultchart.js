// The chart view of a result: a line chart over a time column, or a bar chart of one group-by
// key against the numeric columns. Drawn with Chart.js, bundled locally.
import { Chart } from "../vendor/chart.js";

const NUMERIC = new Set(["INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL", "TIMESTAMP"]);
const TIME_NAME = /(^|_)(time|date|day|days|hour|minute|ts|timestamp)|epoch|time$|date$/i;
const PALETTE = ["#2563eb", "#16a34a", "#db2777", "#ea580c", "#7c3aed", "#0891b2", "#ca8a04", "#4b5563"];

// How `dataSchema` can be charted, or {reason} when it cannot. timeColumns: names known to be
// time columns from the tables' schemas (dateTimeFieldSpecs / timeFieldSpec).
export function chartPlan(dataSchema, timeColumns = new Set()) {
  const names = dataSchema.columnNames || [];
  const types = dataSchema.columnDataTypes || [];
  if (names.length < 2) return { reason: "A chart needs a key column and at least one numeric column." };
  const numeric = names.map((_, i) => NUMERIC.has(types[i]));
  let x = names.findIndex((n) => timeColumns.has(n));
  if (x < 0) x = names.findIndex((n, i) => TIME_NAME.test(n) && (numeric[i] || types[i] === "STRING"));
  if (x >= 0) {
    const series = names.map((_, i) => i).filter((i) => i !== x && numeric[i]);
    if (series.length) return { x, series, kind: "line", time: true };
  }
  const keys = names.map((_, i) => i).filter((i) => !numeric[i]);
  if (keys.length === 1) {
    const series = names.map((_, i) => i).filter((i) => numeric[i]);
    if (series.length) return { x: keys[0], series, kind: "bar", time: false };
  }
  if (keys.length === 0) return { x: 0, series: names.map((_, i) => i).slice(1), kind: "bar", time: false };
  return { reason: "Charts need a time column, or one group-by key, plus numeric columns." };
}

export class ResultChart {
  constructor(canvas) {
    this.canvas = canvas;
    this.chart = null;
  }

  draw(dataSchema, rows, plan, kind) {
    if (this.chart) this.chart.destroy();
    let data = rows;
    if (plan.time) data = [...rows].sort((a, b) => (a[plan.x] > b[plan.x] ? 1 : a[plan.x] < b[plan.x] ? -1 : 0));
    const names = dataSchema.columnNames;
    // what is drawn, readable without pixels (tests, assistive tools)
    this.canvas.dataset.kind = kind || plan.kind;
    this.canvas.dataset.points = String(data.length);
    this.canvas.dataset.x = names[plan.x];
    this.canvas.dataset.series = plan.series.map((i) => names[i]).join(",");
    this.canvas.setAttribute("aria-label", `${kind || plan.kind} chart of ${this.canvas.dataset.series} by ${names[plan.x]}`);
    this.chart = new Chart(this.canvas, {
      type: kind || plan.kind,
      data: {
        labels: data.map((row) => String(row[plan.x])),
        datasets: plan.series.map((i, n) => ({
          label: names[i],
          data: data.map((row) => Number(row[i])),
          borderColor: PALETTE[n % PALETTE.length],
          backgroundColor: PALETTE[n % PALETTE.length] + "99",
          pointRadius: data.length > 200 ? 0 : 2,
          tension: 0.15,
        })),
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        interaction: { mode: "index", intersect: false },
        scales: { x: { title: { display: true, text: names[plan.x] } }, y: { beginAtZero: (kind || plan.kind) === "bar" } },
        plugins: { legend: { position: "bottom" } },
      },
    });
    return this.chart;
  }

  destroy() {
    if (this.chart) this.chart.destroy();
    this.chart = null;
  }
}
