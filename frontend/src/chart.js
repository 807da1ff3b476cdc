// Chart.js with every controller, element and scale registered (static/console/vendor/chart.js).
import Chart from "chart.js/auto";
export { Chart };
