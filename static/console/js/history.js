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
export function recordQuery(entry) {
  const entries = [entry, ...loadHistory()].slice(0, HISTORY_LIMIT);
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
