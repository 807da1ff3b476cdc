// The ZooKeeper browser: a lazily loaded znode tree (GET /zk/lsl), and the selected node's
// data pretty-printed as JSON (GET /zk/get) with its stat (GET /zk/stat). ?path= selects a node,
// so a link to a znode can be shared.
import { api } from "./api.js";
import { el, clear, $, errorText, formatTime, pageReady } from "./ui.js";
import { jsonEditor } from "./jsonedit.js";

const nodes = new Map(); // path -> {li, childList, loaded, toggle, name}
let dataView = null;
let rawData = "";

// Helix records keep documents as JSON text inside fields (e.g. simpleFields.schemaJSON);
// with "Expand embedded JSON" those strings are shown as the objects they encode.
function expandEmbedded(value) {
  if (typeof value === "string" && /^\s*[\[{]/.test(value)) {
    try {
      return expandEmbedded(JSON.parse(value));
    } catch {
      return value;
    }
  }
  if (Array.isArray(value)) return value.map(expandEmbedded);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandEmbedded(v)]));
  return value;
}

function showData() {
  if ($("#zk-expand").checked && rawData) {
    const expanded = expandEmbedded(rawData);
    dataView.set(typeof expanded === "string" ? expanded : JSON.stringify(expanded, null, 2));
  } else {
    dataView.set(rawData);
  }
}

function join(parent, child) {
  return parent === "/" ? `/${child}` : `${parent}/${child}`;
}

function nodeItem(path, label, numChildren) {
  const toggle = el("button", { type: "button", class: "zk-toggle", "aria-label": `Expand ${label}`, "aria-expanded": "false" }, numChildren > 0 ? "▸" : "");
  const name = el("button", { type: "button", class: "zk-name", "data-path": path, title: path }, label,
    numChildren > 0 ? el("span", { class: "muted" }, ` (${numChildren})`) : null);
  const childList = el("ul", { hidden: true });
  const li = el("li", {}, el("div", { class: "zk-node" }, toggle, name), childList);
  const node = { li, childList, loaded: false, toggle, name, hasChildren: numChildren > 0 };
  nodes.set(path, node);
  toggle.addEventListener("click", () => (childList.hidden ? expand(path) : collapse(path)));
  name.addEventListener("click", () => select(path, true));
  return li;
}

async function expand(path) {
  const node = nodes.get(path);
  if (!node || !node.hasChildren) return;
  if (!node.loaded) {
    clear(node.childList, el("li", { class: "muted" }, "Loading…"));
    node.childList.hidden = false;
    try {
      const children = await api.get("/zk/lsl", { path });
      clear(node.childList, Object.keys(children).sort().map((child) => nodeItem(join(path, child), child, children[child].numChildren)));
      node.loaded = true;
    } catch (err) {
      clear(node.childList, el("li", { class: "error-text" }, errorText(err)));
      return;
    }
  }
  node.childList.hidden = false;
  node.toggle.textContent = "▾";
  node.toggle.setAttribute("aria-expanded", "true");
}

function collapse(path) {
  const node = nodes.get(path);
  node.childList.hidden = true;
  node.toggle.textContent = "▸";
  node.toggle.setAttribute("aria-expanded", "false");
}

async function select(path, push) {
  for (const node of nodes.values()) node.name.classList.toggle("active", node.name.dataset.path === path);
  if (push) history.pushState({ path }, "", `?path=${encodeURIComponent(path)}`);
  $("#zk-path").textContent = path;
  const node = nodes.get(path);
  if (node && node.hasChildren && node.childList.hidden) expand(path);
  try {
    const [stat, data] = await Promise.all([api.get("/zk/stat", { path }), api.get("/zk/get", { path }, { raw: true })]);
    renderStat(stat);
    const text = typeof data === "string" ? data : JSON.stringify(data);
    $("#zk-data-note").textContent = text ? `${stat.dataLength ?? text.length} bytes` : "This znode holds no data.";
    rawData = text;
    showData();
  } catch (err) {
    clear($("#zk-stat"), el("p", { class: "error-text" }, errorText(err)));
    rawData = "";
    dataView.set("");
  }
}

function renderStat(stat) {
  const rows = Object.entries(stat).map(([key, value]) =>
    [el("dt", {}, key), el("dd", {}, /time$/.test(key) && value ? `${value} (${formatTime(value)})` : String(value))]);
  clear($("#zk-stat"), el("dl", { class: "kv", "data-testid": "zk-stat" }, rows));
}

// Expands every ancestor of `path` so the node is visible, then selects it.
async function reveal(path) {
  const parts = path.split("/").filter(Boolean);
  let current = "/";
  await expand("/");
  for (const part of parts.slice(0, -1)) {
    current = join(current, part);
    await expand(current);
  }
  await select(path, false);
}

async function init() {
  dataView = jsonEditor($("#zk-data"), "", { readOnly: true });
  clear($("#zk-tree"), el("ul", {}, nodeItem("/", "/", 1)));
  const wanted = new URLSearchParams(location.search).get("path");
  const cluster = `/${document.body.dataset.cluster}`;
  await expand("/");
  if (wanted) await reveal(wanted);
  else if (nodes.has(cluster)) await reveal(cluster);
  else await select("/", false);
}

$("#zk-expand").addEventListener("change", showData);
window.addEventListener("popstate", () => reveal(new URLSearchParams(location.search).get("path") || "/"));
init();
pageReady();
