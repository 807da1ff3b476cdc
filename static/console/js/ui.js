// Small DOM helpers shared by the console pages: element building, notices, tabs, confirm dialogs.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

export const $ = (selector, root = document) => root.querySelector(selector);

export function formatBytes(bytes) {
  if (bytes === undefined || bytes === null || bytes < 0 || Number.isNaN(Number(bytes))) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = Number(bytes);
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

export function formatTime(ms) {
  if (!ms && ms !== 0) return "–";
  const date = new Date(Number(ms));
  return Number.isNaN(date.getTime()) ? String(ms) : date.toLocaleString();
}

export function badge(text, kind) {
  return el("span", { class: `badge badge-${kind || String(text).toLowerCase()}` }, text);
}

// A notice at the top of `container` (or the page's #notices): kind is ok, error or info.
export function notify(message, kind = "info", container) {
  const host = container || document.getElementById("notices");
  const close = el("button", { class: "notice-close", "aria-label": "Dismiss", type: "button" }, "×");
  const note = el("div", { class: `notice notice-${kind}`, role: kind === "error" ? "alert" : "status" },
    el("span", { class: "notice-text" }, message), close);
  close.addEventListener("click", () => note.remove());
  host.prepend(note);
  if (kind === "ok") setTimeout(() => note.remove(), 6000);
  return note;
}

export function errorText(err) {
  return err && err.message ? err.message : String(err);
}

// A modal confirmation; resolves true when the user confirms.
export function confirmDialog(title, message, { confirmLabel = "Confirm", danger = false, extra } = {}) {
  return new Promise((resolve) => {
    const dialog = el("dialog", { class: "modal" },
      el("h3", {}, title), el("p", {}, message), extra,
      el("div", { class: "modal-actions" },
        el("button", { type: "button", class: "btn", value: "cancel" }, "Cancel"),
        el("button", { type: "button", class: danger ? "btn btn-danger" : "btn btn-primary", value: "ok" }, confirmLabel)));
    dialog.addEventListener("click", (event) => {
      if (event.target.tagName === "BUTTON") dialog.close(event.target.value);
    });
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "ok");
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

// A modal with arbitrary content and a Close button.
export function showDialog(title, content) {
  const dialog = el("dialog", { class: "modal modal-wide" },
    el("div", { class: "modal-head" }, el("h3", {}, title),
      el("button", { type: "button", class: "btn btn-small", onclick: () => dialog.close() }, "Close")),
    content);
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}

// Tabs: buttons [data-tab=name] inside `bar` show the panel #<prefix><name>.
export function tabs(bar, onChange) {
  const buttons = [...bar.querySelectorAll("[data-tab]")];
  const select = (name) => {
    for (const button of buttons) {
      const active = button.dataset.tab === name;
      button.classList.toggle("active", active);
      button.setAttribute("aria-selected", String(active));
      const panel = document.getElementById(button.getAttribute("aria-controls"));
      if (panel) panel.hidden = !active;
    }
    if (onChange) onChange(name);
  };
  for (const button of buttons) button.addEventListener("click", () => select(button.dataset.tab));
  return select;
}

// A plain readable table: columns [{label, render(row) -> node|string, class}].
export function simpleTable(columns, rows, { empty = "Nothing here yet.", testid } = {}) {
  if (!rows.length) return el("p", { class: "empty" }, empty);
  return el("div", { class: "table-wrap" },
    el("table", { class: "data", "data-testid": testid },
      el("thead", {}, el("tr", {}, columns.map((c) => el("th", { class: c.class }, c.label)))),
      el("tbody", {}, rows.map((row) => el("tr", {}, columns.map((c) => el("td", { class: c.class }, c.render(row))))))));
}

export function busy(button, promiseFactory) {
  return async (...args) => {
    button.disabled = true;
    try {
      return await promiseFactory(...args);
    } finally {
      button.disabled = false;
    }
  };
}

// Marks the page interactive: until then `main` ignores clicks (see console.css), so nothing
// is clicked before its handler exists.
export function pageReady() {
  document.body.dataset.ready = "true";
}
