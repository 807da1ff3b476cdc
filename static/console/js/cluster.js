// The cluster manager: controllers, brokers, servers and minions (host, ports, alive, enabled,
// tags; enable/disable and edit tags) and tenants with their server, broker and table counts.
// Instances that are registered but not alive are listed at the top and counted in the tiles;
// the instances are read again every few seconds, so a crash and a restart show without a reload.
import { api, instanceRole } from "./api.js";
import { el, clear, $, badge, notify, errorText, simpleTable, showDialog, pageReady } from "./ui.js";

const ROLES = [["controller", "Controllers"], ["broker", "Brokers"], ["server", "Servers"], ["minion", "Minions"]];
const REFRESH_MS = 5000;

function ports(info) {
  const out = [];
  if (info.port !== undefined && info.port !== null && Number(info.port) > 0) out.push(String(info.port));
  for (const [key, label] of [["adminPort", "admin"], ["grpcPort", "grpc"], ["queryServicePort", "query"]]) {
    if (info[key] !== undefined && info[key] !== null && Number(info[key]) > 0) out.push(`${label} ${info[key]}`);
  }
  // one port a line, so the column can narrow at 800 px instead of pushing the actions out
  return out.length ? out.map((text) => el("span", { class: "port" }, text)) : "–";
}

async function setState(info, enable) {
  try {
    await api.put(`/instances/${encodeURIComponent(info.instanceName)}/state`, undefined, { state: enable ? "enable" : "disable" });
    notify(`${info.instanceName} ${enable ? "enabled" : "disabled"}.`, "ok");
  } catch (err) {
    notify(errorText(err), "error");
  }
  loadInstances();
}

function editTags(info) {
  const input = el("input", { type: "text", value: (info.tags || []).join(", "), class: "wide", "aria-label": "Tags", "data-testid": "tags-input" });
  const feedback = el("div", { class: "validation" });
  const save = el("button", { type: "button", class: "btn btn-primary" }, "Save tags");
  const dialog = showDialog(`Tags of ${info.instanceName}`, el("div", {},
    el("p", { class: "muted" }, "Comma-separated, e.g. DefaultTenant_OFFLINE, DefaultTenant_REALTIME. Tags decide which tenant's tables the instance serves."),
    input, el("div", { class: "form-actions" }, save), feedback));
  input.focus();
  save.addEventListener("click", async () => {
    const tags = input.value.split(",").map((t) => t.trim()).filter(Boolean);
    if (!tags.length) {
      feedback.className = "validation error";
      feedback.textContent = "Give at least one tag (untagged instances use e.g. server_untagged).";
      return;
    }
    try {
      await api.put(`/instances/${encodeURIComponent(info.instanceName)}/updateTags`, undefined, { tags: tags.join(",") });
      dialog.close();
      notify(`Tags of ${info.instanceName} updated.`, "ok");
      loadInstances();
    } catch (err) {
      feedback.className = "validation error";
      feedback.textContent = errorText(err);
    }
  });
}

async function loadInstances() {
  const host = $("#instances");
  try {
    const { instances = [] } = await api.get("/instances");
    const details = await Promise.all(instances.sort().map((id) =>
      api.get(`/instances/${encodeURIComponent(id)}`).catch((err) => ({ instanceName: id, error: errorText(err) }))));
    const byRole = Object.fromEntries(ROLES.map(([role]) => [role, []]));
    for (const info of details) (byRole[instanceRole(info.instanceName)] || (byRole.other ||= [])).push(info);
    const notAlive = details.filter((i) => !i.error && !i.alive);
    for (const [role] of ROLES) {
      const dead = byRole[role].filter((i) => !i.error && !i.alive).length;
      clear($(`#tile-${role}`), String(byRole[role].length),
        dead ? el("span", { class: "tile-label error-text", "data-testid": `tile-${role}-not-alive` }, `${dead} not alive`) : "");
      // the ones not alive first: they are what a person looks for here
      byRole[role].sort((a, b) => Number(Boolean(a.alive || a.error)) - Number(Boolean(b.alive || b.error)));
    }
    showNotAlive(notAlive);
    clear(host, ROLES.map(([role, title]) => el("section", { class: "card", "data-role": role },
      el("div", { class: "card-head" }, el("h2", {}, title), el("span", { class: "muted" }, `${byRole[role].length}`)),
      simpleTable([
        { label: "Name", render: (i) => el("span", { class: "mono" }, i.instanceName) },
        { label: "Host", class: "hide-narrow", render: (i) => i.hostName || "–" },
        { label: "Ports", class: "ports", render: (i) => ports(i) },
        { label: "Alive", render: (i) => (i.error ? el("span", { class: "error-text" }, i.error) : badge(i.alive ? "Alive" : "Dead", i.alive ? "alive" : "dead")) },
        { label: "Enabled", render: (i) => badge(i.enabled ? "Enabled" : "Disabled", i.enabled ? "enabled" : "disabled") },
        { label: "Tags", render: (i) => (i.tags || []).map((t) => badge(t, "tag")) },
        { label: "", class: "row-actions", render: (i) => (i.error || role === "controller" ? "" : [
          el("button", { type: "button", class: "btn btn-small", onclick: () => editTags(i) }, "Edit tags"), " ",
          el("button", { type: "button", class: i.enabled ? "btn btn-small btn-danger" : "btn btn-small", onclick: () => setState(i, !i.enabled) }, i.enabled ? "Disable" : "Enable"),
        ]) },
      ], byRole[role], { empty: `No ${title.toLowerCase()} registered.`, testid: `instances-${role}` }))));
  } catch (err) {
    clear(host, el("p", { class: "error-text" }, `Could not list instances: ${errorText(err)}`));
  }
}

function showNotAlive(instances) {
  const host = $("#not-alive");
  host.hidden = instances.length === 0;
  clear(host, instances.length ? el("div", { class: "card-head" },
    el("h2", { class: "error-text" }, `${instances.length} not alive`),
    el("span", { class: "muted" }, "registered, but holding no live ZooKeeper session: stopped, crashed or restarting")) : "",
  instances.length ? el("ul", {}, instances.map((i) =>
    el("li", { class: "mono", "data-instance": i.instanceName }, `${i.instanceName} (${instanceRole(i.instanceName)})`))) : "");
}

async function loadTenants() {
  const host = $("#tenants");
  try {
    const tenants = await api.get("/tenants");
    const names = [...new Set([...(tenants.SERVER_TENANTS || []), ...(tenants.BROKER_TENANTS || [])])].sort();
    const rows = await Promise.all(names.map(async (name) => {
      const path = `/tenants/${encodeURIComponent(name)}`;
      const [servers, brokers, tables] = await Promise.all([
        api.get(path, { type: "server" }).catch(() => ({})),
        api.get(path, { type: "broker" }).catch(() => ({})),
        api.get(`${path}/tables`).catch(() => ({})),
      ]);
      return { name, servers: (servers.ServerInstances || []).length, brokers: (brokers.BrokerInstances || []).length, tables: (tables.tables || []).length };
    }));
    clear(host, simpleTable([
      { label: "Tenant", render: (r) => r.name },
      { label: "Servers", class: "num", render: (r) => String(r.servers) },
      { label: "Brokers", class: "num", render: (r) => String(r.brokers) },
      { label: "Tables", class: "num", render: (r) => String(r.tables) },
    ], rows, { empty: "No tenants.", testid: "tenants-table" }));
  } catch (err) {
    clear(host, el("p", { class: "error-text" }, `Could not list tenants: ${errorText(err)}`));
  }
}

async function loadInfo() {
  try {
    const info = await api.get("/cluster/info");
    $("#cluster-name").textContent = info.clusterName || document.body.dataset.cluster;
    const leader = info.leaderController;
    if (leader) $("#cluster-leader").textContent = `Lead controller: ${leader}`;
  } catch (err) {
    notify(`Could not read /cluster/info: ${errorText(err)}`, "error");
  }
}

loadInfo();
loadInstances().then(() => setInterval(loadInstances, REFRESH_MS));
loadTenants();
pageReady();
