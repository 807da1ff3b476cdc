// The debug API's times have whole seconds ("yyyy-MM-dd HH:mm:ss UTC"), so a difference under
// a second means "under a second", never "0 ms".
import { formatDuration } from "./tasks_common.js";

export function secondsDuration(ms) {
  if (ms === null || ms === undefined || ms < 0) return "–";
  return ms < 1000 ? "< 1 s" : formatDuration(ms);
}
