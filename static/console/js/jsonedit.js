// JSON views and editors on CodeMirror: read-only pretty-printed JSON, or an editor that marks
// syntax errors as you type (jsonParseLinter) before the controller validates the content.
import { EditorView, EditorState, basicSetup, json, jsonParseLinter, linter, lintGutter, Compartment } from "../vendor/codemirror.js";

export function prettyJson(value) {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

export function jsonEditor(parent, value, { readOnly = false, onChange } = {}) {
  const editable = new Compartment();
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: value === undefined ? "" : prettyJson(value),
      extensions: [
        basicSetup,
        json(),
        EditorView.lineWrapping,
        linter(jsonParseLinter(), { delay: 300 }),
        lintGutter(),
        editable.of([EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)]),
        EditorView.updateListener.of((update) => {
          if (update.docChanged && onChange) onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
  return {
    view,
    text: () => view.state.doc.toString(),
    set(newValue) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: prettyJson(newValue) } });
    },
    setReadOnly(flag) {
      view.dispatch({ effects: editable.reconfigure([EditorState.readOnly.of(flag), EditorView.editable.of(!flag)]) });
    },
    // The parsed document, or throws an Error that says where the JSON is broken.
    parse() {
      const text = view.state.doc.toString();
      try {
        return JSON.parse(text);
      } catch (err) {
        throw new Error(`Invalid JSON: ${err.message}`);
      }
    },
  };
}
