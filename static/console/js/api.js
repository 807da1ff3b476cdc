// The console talks to the controller only through its public REST API, the same one scripts
// use. Every write carries Django's CSRF token (csrftoken cookie -> X-CSRFToken header).

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

function urlOf(path, params) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
  }
  return url;
}

// Pinot's controller answers errors as {"code": 404, "error": "..."}; keep that text for the user.
function errorMessage(status, body) {
  if (body && typeof body === "object") {
    if (body.error) return String(body.error);
    if (body.detail) return String(body.detail);
    if (body.message) return String(body.message);
    return JSON.stringify(body);
  }
  if (typeof body === "string" && body.trim()) return body.trim().slice(0, 500);
  return `HTTP ${status}`;
}

async function request(method, path, { params, body, raw = false, signal } = {}) {
  const headers = { Accept: "application/json" };
  if (method !== "GET" && method !== "HEAD") headers["X-CSRFToken"] = csrfToken();
  let payload;
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = typeof body === "string" ? body : JSON.stringify(body);
  }
  const response = await fetch(urlOf(path, params), {
    method,
    headers,
    body: payload,
    credentials: "same-origin",
    signal,
  });
  const text = await response.text();
  let parsed = text;
  const type = response.headers.get("Content-Type") || "";
  if (!raw && (type.includes("json") || /^[\[{"]/.test(text.trim()))) {
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
  }
  if (response.status === 401 || response.status === 403) {
    if (document.body.dataset.authEnabled === "true" && !document.body.dataset.user) {
      window.location.href = `/console/login?next=${encodeURIComponent(location.pathname + location.search)}`;
    }
  }
  if (!response.ok) throw new ApiError(response.status, errorMessage(response.status, parsed), parsed);
  return parsed;
}

export const api = {
  get: (path, params, opts) => request("GET", path, { ...opts, params }),
  post: (path, body, params, opts) => request("POST", path, { ...opts, body, params }),
  put: (path, body, params, opts) => request("PUT", path, { ...opts, body, params }),
  del: (path, params, opts) => request("DELETE", path, { ...opts, params }),
};

// Instances are named Controller_<host>_<port>, Broker_..., Server_..., Minion_...
export function instanceRole(name) {
  const prefix = String(name).split("_")[0].toLowerCase();
  return { controller: "controller", broker: "broker", server: "server", minion: "minion" }[prefix] || "other";
}
