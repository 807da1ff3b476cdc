// The editor pieces the console uses, re-exported as one ES module (static/console/vendor/codemirror.js).
export { EditorView, keymap, placeholder } from "@codemirror/view";
export { EditorState, Compartment, Prec } from "@codemirror/state";
export { basicSetup } from "codemirror";
export { sql, PostgreSQL, StandardSQL } from "@codemirror/lang-sql";
export { json, jsonParseLinter } from "@codemirror/lang-json";
export { linter, lintGutter } from "@codemirror/lint";
export { autocompletion } from "@codemirror/autocomplete";
export { indentWithTab, toggleComment } from "@codemirror/commands";
