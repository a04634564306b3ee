// `marin runs` (the past runs at a prefix) and `marin logs <step> [-f]` (a step's log file, followed while its run lives).
import { promises as fs } from "node:fs";
import path from "node:path";
import { MarinError } from "../errors.ts";
import { listRuns, runnerAlive } from "../executor/runRecords.ts";
import type { RunRecord } from "../executor/runRecords.ts";

function counts(r: RunRecord): { ran: number; skipped: number; failed: number; cancelled: number } {
  const c = { ran: 0, skipped: 0, failed: 0, cancelled: 0 };
  for (const s of r.steps) {
    if (s.outcome === "ran" || s.outcome === "reused") c.ran++;
    else if (s.outcome === "skipped" || s.outcome === "not_selected") c.skipped++;
    else if (s.outcome === "failed" || s.outcome === "dep_failed") c.failed++;
    else if (s.outcome === "cancelled") c.cancelled++;
  }
  return c;
}

/** The lines of `marin runs`: one per run at `prefix`, oldest first. */
export async function formatRuns(prefix: string): Promise<string[]> {
  const runs = await listRuns(prefix);
  if (runs.length === 0) return [`no runs under ${prefix}`];
  const width = Math.max(6, ...runs.map((r) => r.runId.length));
  const lines = [`${"RUN".padEnd(width)}  ${"STARTED".padEnd(24)}  ${"STATE".padEnd(9)}  RAN  SKIPPED  FAILED  CANCELLED`];
  for (const { runId, record } of runs) {
    if (!record) {
      lines.push(`${runId.padEnd(width)}  (no readable run.json)`);
      continue;
    }
    const state = record.state === "finished" ? (record.ok ? "ok" : "failed") : runnerAlive(record) ? "running" : "killed";
    const started = new Date(record.startedAt).toISOString();
    if (record.state !== "finished") {
      lines.push(`${runId.padEnd(width)}  ${started.padEnd(24)}  ${state.padEnd(9)}  ${`(${record.steps.length} steps planned)`}`);
      continue;
    }
    const c = counts(record);
    lines.push(
      `${runId.padEnd(width)}  ${started.padEnd(24)}  ${state.padEnd(9)}  ${String(c.ran).padStart(3)}  ${String(c.skipped).padStart(7)}  ${String(c.failed).padStart(6)}  ${String(c.cancelled).padStart(9)}`,
    );
  }
  return lines;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Prints the log of step `step` from the newest run at `prefix` that has one (or from run `runId`).
 * With `follow`, keeps printing what is appended while that run's runner lives (and, when no run
 * has the log yet, waits for it while some run at the prefix is running).
 */
export async function printLog(prefix: string, step: string, opts: { follow?: boolean; runId?: string; out: (chunk: string) => void; pollMs?: number }): Promise<void> {
  const pollMs = opts.pollMs ?? 250;
  const rel = path.join("logs", `${step}.log`);
  const find = async () => {
    const runs = (await listRuns(prefix)).filter((r) => !opts.runId || r.runId === opts.runId).reverse();
    for (const r of runs) {
      if (
        await fs.stat(path.join(r.dir, rel)).then(
          () => true,
          () => false,
        )
      )
        return { run: r, anyAlive: true };
    }
    return { run: undefined, anyAlive: runs.some((r) => r.record && runnerAlive(r.record)) };
  };
  let found = await find();
  while (!found.run && opts.follow && found.anyAlive) {
    await sleep(pollMs);
    found = await find();
  }
  if (!found.run) {
    throw new MarinError(
      "NOT_FOUND",
      `no log of step ${JSON.stringify(step)} under ${prefix}${opts.runId ? ` in run ${opts.runId}` : ""} (see \`marin runs\`; a step that was skipped writes none)`,
    );
  }
  const file = path.join(found.run.dir, rel);
  let offset = 0;
  const drain = async () => {
    const fh = await fs.open(file, "r");
    try {
      for (;;) {
        const buf = Buffer.alloc(64 * 1024);
        const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
        if (bytesRead === 0) return;
        offset += bytesRead;
        opts.out(buf.subarray(0, bytesRead).toString("utf8"));
      }
    } finally {
      await fh.close();
    }
  };
  await drain();
  if (!opts.follow) return;
  for (;;) {
    const run = (await listRuns(prefix)).find((r) => r.runId === found.run!.runId);
    const alive = run?.record !== undefined && runnerAlive(run.record);
    await drain();
    if (!alive) return;
    await sleep(pollMs);
  }
}
