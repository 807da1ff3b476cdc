// The results grid: search across all cells, sort by a column, pages, CSV download and copy.
import { Papa } from "../vendor/papaparse.js";
import { el, clear } from "./ui.js";

const NUMERIC = new Set(["INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL", "TIMESTAMP"]);

function cellText(value) {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value) || typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function compare(a, b, numeric) {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (numeric) return Number(a) - Number(b);
  return cellText(a).localeCompare(cellText(b), undefined, { numeric: true });
}

export function toCsv(columns, rows) {
  return Papa.unparse({ fields: columns, data: rows.map((row) => row.map((v) => (typeof v === "object" && v !== null ? JSON.stringify(v) : v))) });
}

export class ResultGrid {
  constructor(container, { pageSize = 25, filename = "result" } = {}) {
    this.container = container;
    this.pageSize = pageSize;
    this.filename = filename;
    this.columns = [];
    this.types = [];
    this.rows = [];
    this.search = "";
    this.sort = null; // {index, dir: 1|-1}
    this.page = 0;
  }

  setData(columns, types, rows) {
    this.columns = columns;
    this.types = types || [];
    this.rows = rows;
    this.search = "";
    this.sort = null;
    this.page = 0;
    this.render();
  }

  visibleRows() {
    let rows = this.rows;
    if (this.search) {
      const needle = this.search.toLowerCase();
      rows = rows.filter((row) => row.some((v) => cellText(v).toLowerCase().includes(needle)));
    }
    if (this.sort) {
      const { index, dir } = this.sort;
      const numeric = NUMERIC.has(this.types[index]);
      rows = [...rows].sort((a, b) => dir * compare(a[index], b[index], numeric));
    }
    return rows;
  }

  download() {
    const blob = new Blob([toCsv(this.columns, this.visibleRows())], { type: "text/csv;charset=utf-8" });
    const link = el("a", { href: URL.createObjectURL(blob), download: `${this.filename}.csv` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  }

  async copy(button) {
    const tsv = Papa.unparse({ fields: this.columns, data: this.visibleRows().map((r) => r.map(cellText)) }, { delimiter: "\t" });
    try {
      await navigator.clipboard.writeText(tsv);
    } catch {
      // clipboard API needs a secure context; fall back to a selected textarea
      const area = el("textarea", { class: "offscreen" });
      area.value = tsv;
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    button.textContent = "Copied";
    setTimeout(() => (button.textContent = "Copy"), 1500);
  }

  render() {
    const rows = this.visibleRows();
    const pages = Math.max(1, Math.ceil(rows.length / this.pageSize));
    this.page = Math.min(this.page, pages - 1);
    const start = this.page * this.pageSize;
    const shown = rows.slice(start, start + this.pageSize);

    const searchBox = el("input", { type: "search", class: "grid-search", placeholder: "Search results", "aria-label": "Search results", value: this.search });
    searchBox.addEventListener("input", () => {
      this.search = searchBox.value;
      this.page = 0;
      this.renderKeepingFocus();
    });
    const copyButton = el("button", { type: "button", class: "btn btn-small", "data-testid": "grid-copy" }, "Copy");
    copyButton.addEventListener("click", () => this.copy(copyButton));
    const toolbar = el("div", { class: "grid-toolbar" }, searchBox,
      el("span", { class: "grid-count", "data-testid": "grid-count" },
        this.search ? `${rows.length} of ${this.rows.length} rows` : `${this.rows.length} rows`),
      el("span", { class: "spacer" }),
      el("button", { type: "button", class: "btn btn-small", "data-testid": "grid-csv", onclick: () => this.download() }, "CSV"),
      copyButton);

    const header = el("tr", {}, this.columns.map((name, index) => {
      const sorted = this.sort && this.sort.index === index;
      const th = el("th", { class: NUMERIC.has(this.types[index]) ? "num sortable" : "sortable", title: this.types[index] || "",
        "aria-sort": sorted ? (this.sort.dir === 1 ? "ascending" : "descending") : "none" },
        name, el("span", { class: "sort-mark" }, sorted ? (this.sort.dir === 1 ? " ▲" : " ▼") : ""));
      th.addEventListener("click", () => {
        this.sort = sorted && this.sort.dir === 1 ? { index, dir: -1 } : sorted ? null : { index, dir: 1 };
        this.render();
      });
      return th;
    }));
    const body = el("tbody", {}, shown.map((row) => el("tr", {}, row.map((value, index) =>
      el("td", { class: [NUMERIC.has(this.types[index]) ? "num" : "", value === null ? "null" : ""].join(" ").trim() || undefined, title: cellText(value).length > 40 ? cellText(value) : undefined }, cellText(value))))));

    const pager = el("div", { class: "grid-pager" },
      el("button", { type: "button", class: "btn btn-small", disabled: this.page === 0, onclick: () => { this.page -= 1; this.render(); } }, "‹ Prev"),
      el("span", { "data-testid": "grid-page" }, `Page ${this.page + 1} of ${pages}`),
      el("button", { type: "button", class: "btn btn-small", disabled: this.page >= pages - 1, onclick: () => { this.page += 1; this.render(); } }, "Next ›"),
      pageSizeSelect(this));

    clear(this.container, toolbar,
      el("div", { class: "table-wrap" }, el("table", { class: "data grid", "data-testid": "result-grid" }, el("thead", {}, header), body)),
      rows.length ? pager : el("p", { class: "empty" }, this.rows.length ? "No row matches the search." : "The query returned no rows."));
  }

  renderKeepingFocus() {
    const position = this.container.querySelector(".grid-search").selectionStart;
    this.render();
    const box = this.container.querySelector(".grid-search");
    box.focus();
    box.setSelectionRange(position, position);
  }
}

function pageSizeSelect(grid) {
  const select = el("select", { "aria-label": "Rows per page" }, [10, 25, 50, 100, 500].map((n) =>
    el("option", { value: n, selected: n === grid.pageSize }, `${n} / page`)));
  select.addEventListener("change", () => {
    grid.pageSize = Number(select.value);
    grid.page = 0;
    grid.render();
  });
  return select;
}
