// The query history: the last 100 queries with their time and outcome, kept in localStorage so
// it survives reloads (per browser, per controller origin).

const KEY = "sprig.queryHistory.v1";
export const HISTORY_LIMIT = 100;

export function loadHistory() {
  try {
    const entries = JSON.parse(localStorage.getItem(KEY) || "[]");
    return Array.isArray(entries) ? entries : [];
  } catch {
    return [];
  }
}

// entry: {sql, at (epoch ms), status "ok"|"error", timeUsedMs, numRows, error}
// A re-run of the newest entry (same SQL, same outcome) replaces it instead of repeating it.
export function recordQuery(entry) {
  let previous = loadHistory();
  if (previous.length && previous[0].sql === entry.sql && previous[0].status === entry.status) previous = previous.slice(1);
  const entries = [entry, ...previous].slice(0, HISTORY_LIMIT);
  try {
    localStorage.setItem(KEY, JSON.stringify(entries));
  } catch {
    // storage full or disabled: the history is a convenience, never a reason to fail a query
  }
  return entries;
}

export function clearHistory() {
  localStorage.removeItem(KEY);
}
