// Papa Parse, for RFC 4180 CSV output of result grids (static/console/vendor/papaparse.js).
import Papa from "papaparse";
export { Papa };
