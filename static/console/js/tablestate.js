// Table state as the console shows it, derived from the REST API's ideal state and external
// view: a segment is GOOD when the external view equals the ideal state, BAD when a replica is
// in ERROR, and UPDATING otherwise (servers still loading, dropping or catching up).
import { api } from "./api.js";

export function sameReplicas(ideal, view) {
  const a = Object.keys(ideal || {});
  const b = Object.keys(view || {});
  return a.length === b.length && a.every((instance) => view[instance] === ideal[instance]);
}

export function segmentStatus(idealReplicas, viewReplicas) {
  if (Object.values(viewReplicas || {}).includes("ERROR")) return "BAD";
  return sameReplicas(idealReplicas, viewReplicas) ? "GOOD" : "UPDATING";
}

// [{segment, type, status, ideal: {instance: state}, view: {instance: state}}] for every type.
export function segmentRows(idealByType, viewByType) {
  const rows = [];
  for (const type of ["OFFLINE", "REALTIME"]) {
    const ideal = (idealByType || {})[type];
    if (!ideal) continue;
    const view = (viewByType || {})[type] || {};
    for (const segment of Object.keys(ideal).sort()) {
      rows.push({ segment, type, status: segmentStatus(ideal[segment], view[segment]), ideal: ideal[segment], view: view[segment] || {} });
    }
  }
  return rows;
}

// The worst status among segments: BAD > UPDATING > GOOD ("GOOD" for an empty table).
export function tableStatus(rows) {
  if (rows.some((r) => r.status === "BAD")) return "BAD";
  if (rows.some((r) => r.status === "UPDATING")) return "UPDATING";
  return "GOOD";
}

// Everything the tables list needs about one raw table name.
export async function tableSummary(table) {
  const path = `/tables/${encodeURIComponent(table)}`;
  const [configs, ideal, view, size] = await Promise.all([
    api.get(path), api.get(`${path}/idealstate`), api.get(`${path}/externalview`), api.get(`${path}/size`).catch(() => null),
  ]);
  const rows = segmentRows(ideal, view);
  return { table, types: Object.keys(configs || {}).filter((t) => configs[t]), configs, rows, size, status: tableStatus(rows) };
}
