// `iris cluster status` for people: one line per group, then each group's last decisions.
import { formatMillis } from "../controller/scheduler.ts";
import type { ClusterStatus } from "./autoscaler.ts";

function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19);
}

/** The status as a table and a decision log. */
export function formatClusterStatus(s: ClusterStatus): string {
  const head = ["GROUP", "PROVIDER", "MIN", "MAX", "PENDING", "BOOTING", "READY", "IDLE", "DRAINING", "DEMAND", "BACKOFF"];
  const rows = s.groups.map((g) => [
    g.name,
    g.provider,
    String(g.minWorkers),
    String(g.maxWorkers),
    String(g.pending),
    String(g.booting),
    String(g.ready),
    String(g.idle),
    String(g.draining),
    g.demand.tasks === 0 ? "-" : `${g.demand.tasks} task${g.demand.tasks === 1 ? "" : "s"} (${g.demand.units} unit${g.demand.units === 1 ? "" : "s"})`,
    g.backoffUntilMs > s.atMs ? `${formatMillis(g.backoffUntilMs - s.atMs)} (boot failed ${g.failedBoots}×)` : "-",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]): string =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  let out = `${[head, ...rows].map(line).join("\n")}\n`;
  for (const g of s.groups) {
    if (g.workers.length > 0) {
      out += `\n${g.name} workers:\n`;
      for (const w of g.workers)
        out += `  ${w.workerId}  ${w.state}${w.state === "ready" ? (w.busy ? " (busy)" : " (idle)") : ""}  ${w.providerId}${w.detail ? `  ${w.detail}` : ""}\n`;
    }
  }
  const decisions = s.decisions.slice(-20);
  if (decisions.length > 0) {
    out += "\ndecisions:\n";
    for (const d of decisions) out += `  ${clock(d.atMs)}  ${d.kind === "error" ? "error: " : ""}${d.reason}\n`;
  }
  return out;
}
