// "Add Schema", "Add Offline Table" and "Add Realtime Table": paste Pinot JSON, validate it with
// the controller's own validate endpoints, then create it through the same REST API.
import { api } from "./api.js";
import { el, showDialog, errorText, notify } from "./ui.js";
import { jsonEditor } from "./jsonedit.js";

const KINDS = {
  schema: { title: "Add Schema", validate: "/schemas/validate", create: "/schemas", hint: "Paste a Pinot schema (schemaName, dimensionFieldSpecs, metricFieldSpecs, dateTimeFieldSpecs)." },
  OFFLINE: { title: "Add Offline Table", validate: "/tables/validate", create: "/tables", hint: 'Paste a Pinot table config with "tableType": "OFFLINE". Its schema must exist.' },
  REALTIME: { title: "Add Realtime Table", validate: "/tables/validate", create: "/tables", hint: 'Paste a Pinot table config with "tableType": "REALTIME" and its streamConfigs. Its schema must exist.' },
};

function checkType(kind, doc) {
  if (kind === "schema") {
    if (!doc || typeof doc !== "object" || !doc.schemaName) throw new Error('A schema needs a "schemaName".');
    return;
  }
  if (!doc || typeof doc !== "object" || !doc.tableName) throw new Error('A table config needs a "tableName".');
  const type = String(doc.tableType || "").toUpperCase();
  if (type !== kind) throw new Error(`This form adds ${kind} tables, but the config says "tableType": "${doc.tableType ?? ""}".`);
}

// Opens the dialog; `onCreated` runs after the controller accepted the document.
export function openAddDialog(kind, onCreated) {
  const spec = KINDS[kind];
  const feedback = el("div", { class: "validation", "data-testid": "validation", "aria-live": "polite" });
  const box = el("div", { class: "json-box", "data-testid": "json-input" });
  const content = el("div", {}, el("p", { class: "muted" }, spec.hint), box, feedback);
  const formatButton = el("button", { type: "button", class: "btn" }, "Format");
  const validateButton = el("button", { type: "button", class: "btn" }, "Validate");
  const createButton = el("button", { type: "button", class: "btn btn-primary" }, "Create");
  content.append(el("div", { class: "form-actions" }, formatButton, validateButton, createButton));
  const dialog = showDialog(spec.title, content);
  const editor = jsonEditor(box, "");
  editor.view.focus();

  const show = (text, ok) => {
    feedback.className = `validation ${ok ? "ok" : "error"}`;
    feedback.textContent = text;
  };
  const parsed = () => {
    const doc = editor.parse();
    checkType(kind, doc);
    return doc;
  };
  formatButton.addEventListener("click", () => {
    try {
      editor.set(editor.parse());
      show("", true);
    } catch (err) {
      show(errorText(err), false);
    }
  });
  validateButton.addEventListener("click", async () => {
    try {
      await api.post(spec.validate, parsed());
      show("Valid: the controller accepts this document.", true);
    } catch (err) {
      show(errorText(err), false);
    }
  });
  createButton.addEventListener("click", async () => {
    createButton.disabled = true;
    try {
      const doc = parsed();
      await api.post(spec.create, doc);
      dialog.close();
      notify(`${kind === "schema" ? "Schema" : "Table"} ${doc.schemaName || doc.tableName} created.`, "ok");
      if (onCreated) onCreated(doc);
    } catch (err) {
      show(errorText(err), false);
    } finally {
      createButton.disabled = false;
    }
  });
}
