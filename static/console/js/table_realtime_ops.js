// The real-time panel's operations, each after a confirmation: Pause consumption, Resume with
// consumeFrom (where each partition continues: where it left off, smallest or largest offset),
// Force commit with its job followed until every segment is committed; and the pause status.
// Shapes are Pinot's: PauseStatusDetails {pauseFlag, consumingSegments, reasonCode, comment,
// timestamp}; forceCommit {forceCommitJobId, ...}; forceCommitStatus {segmentsForceCommitted
// (a JSON-encoded string), segmentsYetToBeCommitted, numberOfSegmentsYetToBeCommitted}.
import { api } from "./api.js";
import { el, clear, $, badge, notify, errorText, confirmDialog } from "./ui.js";

const JOB_POLL_MS = 2000;

export class RealtimeOps {
  constructor(rawTable, onChange) {
    this.raw = rawTable;
    this.path = `/tables/${encodeURIComponent(rawTable)}`;
    this.onChange = onChange;
    this.job = null;
  }

  bind() {
    $("#rt-pause").addEventListener("click", () => this.pause());
    $("#rt-resume").addEventListener("click", () => this.resume());
    $("#rt-force-commit").addEventListener("click", () => this.forceCommit());
  }

  async loadStatus() {
    const host = $("#rt-pause-status");
    try {
      const status = await api.get(`${this.path}/pauseStatus`);
      const paused = Boolean(status.pauseFlag);
      host.dataset.paused = String(paused);
      clear(host, paused ? badge("paused", "warn") : badge("consuming", "good"),
        paused && status.reasonCode ? [" ", el("span", { class: "muted small" }, status.reasonCode)] : "",
        status.timestamp ? [" ", el("span", { class: "muted small" }, `since ${status.timestamp}`)] : "");
      host.title = status.comment || "";
      $("#rt-pause").disabled = paused;
      $("#rt-resume").disabled = !paused;
      return status;
    } catch (err) {
      delete host.dataset.paused;
      clear(host, el("span", { class: "muted small" }, err.status === 404 || err.status === 405
        ? "this controller serves no pauseStatus" : `pause status unknown: ${errorText(err)}`));
      return null;
    }
  }

  show(title, ...children) {
    const box = $("#rt-op-result");
    box.hidden = false;
    clear(box, el("div", { class: "card-head" }, el("strong", {}, title),
      el("div", { class: "actions" }, el("button", { type: "button", class: "btn btn-small", onclick: () => (box.hidden = true) }, "Dismiss"))), children);
  }

  async run(button, title, call, describe) {
    button.disabled = true;
    try {
      const out = await call();
      this.show(title, describe(out));
    } catch (err) {
      this.show(title, el("div", { class: "alert alert-error", "data-testid": "rt-op-error" }, errorText(err)));
    } finally {
      button.disabled = false;
      await this.loadStatus();
      if (this.onChange) this.onChange();
    }
  }

  describePause(out) {
    const segments = out.consumingSegments || [];
    return el("div", { "data-testid": "rt-op-outcome" },
      el("p", {}, out.pauseFlag ? badge("paused", "warn") : badge("consuming", "good"), " ", out.comment || ""),
      segments.length ? el("p", { class: "small" }, `Consuming segments at the time: `, segments.map((s) => [el("span", { class: "mono" }, s), " "])) : "");
  }

  async pause() {
    const ok = await confirmDialog(`Pause consumption of ${this.raw}?`,
      "Every CONSUMING segment is committed and no new one is created, so ingestion stops until it is resumed. Queries keep answering from the committed segments.",
      { confirmLabel: "Pause" });
    if (ok) await this.run($("#rt-pause"), "Pause consumption", () => api.post(`${this.path}/pauseConsumption`), (out) => this.describePause(out));
  }

  async resume() {
    const from = el("select", { id: "rt-consume-from", "data-testid": "rt-consume-from" },
      el("option", { value: "" }, "where each partition left off"),
      el("option", { value: "smallest" }, "smallest offset (re-read what the stream still holds)"),
      el("option", { value: "largest" }, "largest offset (skip what arrived while paused)"));
    const ok = await confirmDialog(`Resume consumption of ${this.raw}?`,
      "A new CONSUMING segment is created for each partition. smallest may ingest rows again that committed segments hold; largest skips rows.",
      { confirmLabel: "Resume", extra: el("label", { class: "field-inline", for: "rt-consume-from" }, "Consume from ", from) });
    if (!ok) return;
    const params = from.value ? { consumeFrom: from.value } : undefined;
    await this.run($("#rt-resume"), "Resume consumption", () => api.post(`${this.path}/resumeConsumption`, undefined, params), (out) => this.describePause(out));
  }

  async forceCommit() {
    const ok = await confirmDialog(`Force commit ${this.raw}?`,
      "Every CONSUMING segment is sealed now, at its current offset, and the next one starts consuming from there. Use it to make a config change (indexes, flush threshold) reach new segments sooner.",
      { confirmLabel: "Force commit" });
    if (!ok) return;
    await this.run($("#rt-force-commit"), "Force commit", () => api.post(`${this.path}/forceCommit`), (out) => {
      const id = out.forceCommitJobId;
      const named = out.forceCommittedSegments;
      const body = el("div", { "data-testid": "rt-op-outcome" },
        el("p", {}, "Job ", el("span", { class: "mono", "data-testid": "force-commit-job" }, id || "(no id)"),
          named && named.length ? ` for ${[].concat(named).length} segment(s)` : ""),
        el("p", { id: "rt-job-status", "data-testid": "force-commit-status", class: "small" }, "Checking the job…"));
      if (id) setTimeout(() => this.followJob(id), 0); // once the body is on the page
      return body;
    });
  }

  // Polls the job every 2 s until no segment is left to commit (or the job is unknown).
  async followJob(id) {
    this.job = id;
    // a newer job, or a dismissed result box, ends this one's polling
    while (this.job === id) {
      const host = $("#rt-job-status");
      if (!host) return;
      try {
        const status = await api.get(`/tables/forceCommitStatus/${encodeURIComponent(id)}`);
        const all = parseList(status.segmentsForceCommitted);
        const left = status.numberOfSegmentsYetToBeCommitted ?? (status.segmentsYetToBeCommitted || []).length;
        host.dataset.left = String(left);
        clear(host, left === 0 ? badge("done", "good") : badge("committing", "warn"), " ",
          `${all.length - left} of ${all.length} segment(s) committed`,
          left ? el("span", { class: "muted" }, `; waiting for ${(status.segmentsYetToBeCommitted || []).join(", ")}`) : "");
        if (left === 0) {
          if (this.onChange) this.onChange();
          return;
        }
      } catch (err) {
        clear(host, el("span", { class: "error-text" }, `Job status unavailable: ${errorText(err)}`));
        if (err.status === 404) return;
      }
      await new Promise((resolve) => setTimeout(resolve, JOB_POLL_MS));
    }
  }
}

// segmentsForceCommitted is a JSON-encoded string in Pinot's answer; accept a list as well
function parseList(value) {
  if (Array.isArray(value)) return value;
  try {
    const parsed = JSON.parse(value || "[]");
    return Array.isArray(parsed) ? parsed : [];
  } catch {
    notify("forceCommitStatus: segmentsForceCommitted is not a JSON list", "error");
    return [];
  }
}
