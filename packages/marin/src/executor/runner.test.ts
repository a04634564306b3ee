// runGraph in-process: order, skips, failures, concurrency, --only/--force, leases, staging, and crash-interrupted publishes.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveGraph } from "../step/graph.ts";
import { defineStep, outputOf } from "../step/step.ts";
import type { Step, StepContext } from "../step/step.ts";
import { planRun } from "./plan.ts";
import { runGraph } from "./runner.ts";
import { listPrefix } from "./prefixStatus.ts";
import { writeFileAtomic } from "@marin/iris/toolkit";
import { META_WRITE, metaDir, readStatus } from "./stepFiles.ts";

let tmp: string;
let prefix: string;
beforeEach(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "marin-runner-"));
  prefix = path.join(tmp, "out");
});
afterEach(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

/** Every file under `root` with its mtime (the "nothing changed" check). */
async function snapshot(root: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const walk = async (d: string) => {
    let names: string[];
    try {
      names = await fs.readdir(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = path.join(d, n);
      const st = await fs.stat(p);
      out.set(path.relative(root, p), st.mtimeMs);
      if (st.isDirectory()) await walk(p);
    }
  };
  await walk(root);
  return out;
}

/** A diamond whose bodies record their calls and write a file each. */
function diamond(calls: string[], opts: { failB?: boolean; n?: number } = {}) {
  const body =
    (name: string, fail = false) =>
    async (ctx: StepContext<unknown>) => {
      calls.push(name);
      if (fail) throw new Error(`${name} exploded`);
      await fs.writeFile(path.join(ctx.outputPath, "out.txt"), `${name}:${JSON.stringify(ctx.config)}`);
      return { name };
    };
  const a = defineStep({ name: "a", config: { n: opts.n ?? 1 }, fn: body("a") });
  const b = defineStep({ name: "b", config: { in: outputOf(a) }, fn: body("b", opts.failB) });
  const c = defineStep({ name: "c", config: { in: outputOf(a) }, fn: body("c") });
  const d = defineStep({ name: "d", config: { l: outputOf(b), r: outputOf(c) }, fn: body("d") });
  const e = defineStep({ name: "e", config: {}, fn: body("e") });
  return [d, e] as Step<any>[];
}

describe("runner", () => {
  it("runs a diamond once each in dependency order, then skips everything", async () => {
    const calls: string[] = [];
    const g = resolveGraph(diamond(calls), prefix);
    const first = await runGraph(g);
    expect(first.ok).toBe(true);
    expect([...calls].sort()).toEqual(["a", "b", "c", "d", "e"]);
    expect(calls.indexOf("a")).toBeLessThan(calls.indexOf("b"));
    expect(calls.indexOf("a")).toBeLessThan(calls.indexOf("c"));
    expect(calls.indexOf("d")).toBeGreaterThan(calls.indexOf("b"));
    expect(calls.indexOf("d")).toBeGreaterThan(calls.indexOf("c"));
    for (const s of g.steps) {
      expect((await readStatus(s.outputPath))?.state).toBe("SUCCESS");
      expect(await fs.readFile(path.join(s.outputPath, "out.txt"), "utf8")).toContain(s.name);
      expect((await fs.readdir(metaDir(s.outputPath))).filter((n) => n.startsWith("staging") || n === "publish.json")).toEqual([]);
    }
    const d = g.byName.get("d")!;
    expect(await fs.readFile(path.join(d.outputPath, "out.txt"), "utf8")).toContain(g.byName.get("b")!.outputPath);

    calls.length = 0;
    const before = await snapshot(tmp);
    const second = await runGraph(resolveGraph(diamond(calls), prefix));
    expect(calls).toEqual([]);
    expect(second.steps.map((s) => s.outcome)).toEqual(["skipped", "skipped", "skipped", "skipped", "skipped"]);
    expect(second.steps.find((s) => s.name === "d")?.result).toEqual({ name: "d" });
    expect(await snapshot(tmp)).toEqual(before);
  });

  it("a failure marks dependants DEP_FAILED, the rest continue, nothing of the failed step is published", async () => {
    const calls: string[] = [];
    const g = resolveGraph(diamond(calls, { failB: true }), prefix);
    const r = await runGraph(g, { maxConcurrent: 1 });
    expect(r.ok).toBe(false);
    const outcome = Object.fromEntries(r.steps.map((s) => [s.name, s.outcome]));
    expect(outcome).toEqual({ a: "ran", b: "failed", c: "ran", d: "dep_failed", e: "ran" });
    expect(calls).not.toContain("d");
    const b = await readStatus(g.byName.get("b")!.outputPath);
    expect(b?.state).toBe("FAILED");
    expect(b?.error).toContain("b exploded");
    expect((await readStatus(g.byName.get("d")!.outputPath))?.state).toBe("DEP_FAILED");
    await expect(fs.stat(g.byName.get("b")!.outputPath)).rejects.toThrow(/ENOENT/); // never published: no output folder

    // Fixed code: the rerun runs only b and d.
    calls.length = 0;
    const again = await runGraph(resolveGraph(diamond(calls), prefix));
    expect(again.ok).toBe(true);
    expect(calls.sort()).toEqual(["b", "d"]);
  });

  it("a failure while an independent step finishes in parallel never stalls the run", async () => {
    // x fails; y (independent) is released the moment x's failure is reported, so it finishes while
    // x's dependants are being marked DEP_FAILED. Repeated: the gap is a matter of I/O timing.
    for (let round = 0; round < 8; round++) {
      const roundPrefix = path.join(tmp, `race-${round}`);
      let releaseY: () => void = () => undefined;
      const yGate = new Promise<void>((r) => (releaseY = r));
      const x = defineStep({ name: "x", config: { round }, fn: () => Promise.reject(new Error("x exploded")) });
      const d1 = defineStep({ name: "d1", config: { x: outputOf(x) }, fn: () => undefined });
      const d2 = defineStep({ name: "d2", config: { x: outputOf(x) }, fn: () => undefined });
      const d3 = defineStep({ name: "d3", config: { d2: outputOf(d2) }, fn: () => undefined });
      const y = defineStep({ name: "y", config: { round }, fn: () => yGate });
      const r = await runGraph(resolveGraph([d1, d3, y], roundPrefix), {
        maxConcurrent: 2,
        onEvent: (e) => {
          if (e.type === "step-done" && e.report.name === "x") releaseY();
        },
      });
      const outcome = Object.fromEntries(r.steps.map((s) => [s.name, s.outcome]));
      expect(outcome).toEqual({ x: "failed", d1: "dep_failed", d2: "dep_failed", d3: "dep_failed", y: "ran" });
      const g = resolveGraph([d1, d3, y], roundPrefix);
      for (const n of ["d1", "d2", "d3"]) expect((await readStatus(g.byName.get(n)!.outputPath))?.state).toBe("DEP_FAILED");
    }
  });

  it("runs independent steps in parallel, never more than --max-concurrent", async () => {
    let live = 0;
    let peak = 0;
    const steps = Array.from({ length: 6 }, (_, i) =>
      defineStep({
        name: `s${i}`,
        config: { i },
        fn: async () => {
          live++;
          peak = Math.max(peak, live);
          // Hold until three run at once (or give up after 2 s, so a too-low limit fails the assertion).
          const deadline = Date.now() + 2000;
          while (live < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
          await new Promise((r) => setTimeout(r, 20));
          live--;
        },
      }),
    );
    const r = await runGraph(resolveGraph(steps, prefix), { maxConcurrent: 3 });
    expect(r.ok).toBe(true);
    expect(peak).toBe(3);
  });

  it("--only runs the matches and what they need; --force reruns a finished step", async () => {
    const calls: string[] = [];
    let r = await runGraph(resolveGraph(diamond(calls), prefix), { only: ["^b$"] });
    expect(calls.sort()).toEqual(["a", "b"]);
    expect(r.steps.find((s) => s.name === "d")?.outcome).toBe("not_selected");

    calls.length = 0;
    await runGraph(resolveGraph(diamond(calls), prefix), { only: ["^d$"] });
    expect(calls.sort()).toEqual(["c", "d"]);

    calls.length = 0;
    r = await runGraph(resolveGraph(diamond(calls), prefix), { force: ["^c$"] });
    // e never ran; c ran before and is forced; a, b, d are done.
    expect(calls.sort()).toEqual(["c", "e"]);
    expect(r.steps.find((s) => s.name === "c")?.outcome).toBe("ran");

    // A finished step prunes its own dependencies: --only d with a forced a runs nothing, since d
    // (finished, not forced) does not need a, and a is not selected.
    calls.length = 0;
    r = await runGraph(resolveGraph(diamond(calls), prefix), { only: ["^d$"], force: ["^a$"] });
    expect(calls).toEqual([]);
    expect(r.steps.find((s) => s.name === "d")?.outcome).toBe("skipped");
    expect(r.steps.find((s) => s.name === "a")?.outcome).toBe("not_selected");
    // Whereas --only a with --force a reruns a (and only a).
    r = await runGraph(resolveGraph(diamond(calls), prefix), { only: ["^a$"], force: ["^a$"] });
    expect(calls).toEqual(["a"]);
    expect(r.steps.find((s) => s.name === "a")?.outcome).toBe("ran");
    expect(r.steps.find((s) => s.name === "d")?.outcome).toBe("not_selected");
  });

  it("a plan (dry run) reads only: no file appears or changes", async () => {
    const calls: string[] = [];
    await runGraph(resolveGraph(diamond(calls, { n: 1 }), prefix));
    const before = await snapshot(tmp);
    const plan = await planRun(resolveGraph(diamond(calls, { n: 2 }), prefix));
    expect(plan.entries.map((e) => e.action)).toEqual(["run", "run", "run", "run", "skip"]);
    expect(plan.byName.get("a")!.reason).toContain("identity changed");
    expect(plan.byName.get("a")!.changes).toEqual([{ path: "n", old: "1", new: "2" }]);
    expect(await snapshot(tmp)).toEqual(before);
    const fresh = path.join(tmp, "never");
    await planRun(resolveGraph(diamond(calls), fresh));
    await expect(fs.stat(fresh)).rejects.toThrow();
  });

  it("a step whose lease is lost is aborted and not marked SUCCESS", async () => {
    const g = resolveGraph(
      [
        defineStep({
          name: "slow",
          config: {},
          fn: async (ctx) => {
            await fs.writeFile(path.join(ctx.outputPath, "partial"), "x");
            // Another runner takes the step over: the next token appears.
            const meta = metaDir(ctx.finalPath);
            const tokens = (await fs.readdir(meta)).filter((n) => /^lease-\d+\.json$/.test(n));
            const top = Math.max(...tokens.map((n) => Number(/\d+/.exec(n)![0])));
            const rival = { owner: "rival", token: top + 1, expiresAt: Date.now() + 60_000, host: "elsewhere", pid: 1 };
            await fs.writeFile(path.join(meta, `lease-${top + 1}.json`), JSON.stringify(rival));
            await new Promise<void>((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
          },
        }),
      ],
      prefix,
    );
    const r = await runGraph(g, { leaseTtlMs: 300 });
    expect(r.steps[0].outcome).toBe("failed");
    expect(r.steps[0].error).toMatch(/lease .* lost/);
    const st = await readStatus(g.steps[0].outputPath);
    expect(st?.state).not.toBe("SUCCESS");
    await expect(fs.stat(g.steps[0].outputPath)).rejects.toThrow(/ENOENT/); // never published: no output folder
  });

  it("a log line after the step ended (abandoned body) is dropped, not a crash", async () => {
    let lateLog: ((line: string) => void) | undefined;
    const cancel = new AbortController();
    const g = resolveGraph(
      [
        defineStep({
          name: "abandoned",
          config: {},
          fn: (ctx) => {
            ctx.log("before");
            lateLog = ctx.log;
            cancel.abort();
            // Never settles: the runner abandons it on cancel, like a body racing a lost lease.
            return new Promise<void>(() => undefined);
          },
        }),
      ],
      prefix,
    );
    const lines: string[] = [];
    const r = await runGraph(g, { signal: cancel.signal, onEvent: (e) => e.type === "log" && lines.push(e.line) });
    expect(r.steps[0].outcome).toBe("cancelled");
    lateLog!("after the end");
    // Let a stream error (write after end) surface, if there were one: vitest fails on it.
    await new Promise((res) => setImmediate(res));
    await new Promise((res) => setImmediate(res));
    expect(lines).not.toContain("after the end");
    const logFile = path.join(prefix, ".marin", "runs", r.runId, "logs", "abandoned.log");
    const text = await fs.readFile(logFile, "utf8");
    expect(text).toContain("before");
    expect(text).not.toContain("after the end");
  });

  it("takes over a stale lease left by a runner on another host", async () => {
    let ran = 0;
    const g = resolveGraph([defineStep({ name: "s", config: {}, fn: () => void ran++ })], prefix);
    const meta = metaDir(g.steps[0].outputPath);
    await fs.mkdir(meta, { recursive: true });
    await fs.writeFile(path.join(meta, "lease-7.json"), JSON.stringify({ owner: "gone", token: 7, expiresAt: Date.now() - 1, host: "elsewhere", pid: 1 }));
    await fs.writeFile(path.join(meta, "status.json"), JSON.stringify({ state: "RUNNING", updatedAt: Date.now() - 60_000 }));
    const plan = await planRun(g);
    expect(plan.entries[0].reason).toMatch(/stale lease \(owner gone\); would take over/);
    const r = await runGraph(g);
    expect(r.steps[0].outcome).toBe("ran");
    expect(ran).toBe(1);
    expect((await readStatus(g.steps[0].outputPath))?.token).toBe(8);
  });

  it("waits for a step another runner holds, then reuses its result", async () => {
    let ran = 0;
    const g = resolveGraph([defineStep({ name: "s", config: {}, fn: () => void ran++ })], prefix);
    const meta = metaDir(g.steps[0].outputPath);
    await fs.mkdir(meta, { recursive: true });
    const lease = { owner: "other", token: 1, expiresAt: Date.now() + 60_000, host: "elsewhere", pid: 1 };
    await fs.writeFile(path.join(meta, "lease-1.json"), JSON.stringify(lease));
    await fs.writeFile(path.join(meta, "status.json"), JSON.stringify({ state: "RUNNING", updatedAt: Date.now() }));
    expect((await planRun(g)).entries[0].action).toBe("wait");
    const events: string[] = [];
    const running = runGraph(g, { pollMs: 20, onEvent: (e) => e.type === "step" && events.push(e.state) });
    // The other runner finishes: SUCCESS with a result, then it releases.
    const deadline = Date.now() + 5000;
    while (!events.includes("waiting") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    // Written the way a runner writes them: atomically (write, then rename).
    await writeFileAtomic(path.join(meta, "status.json"), JSON.stringify({ state: "SUCCESS", updatedAt: Date.now(), finishedAt: Date.now(), result: { by: "other" } }), META_WRITE);
    await writeFileAtomic(path.join(meta, "lease-1.json"), JSON.stringify({ ...lease, released: true }), META_WRITE);
    const r = await running;
    expect(r.steps[0].outcome).toBe("reused");
    expect(r.steps[0].result).toEqual({ by: "other" });
    expect(ran).toBe(0);
  });

  it("each lease token stages in its own folder; a resumable step takes over a stale holder's", async () => {
    const seen: { staging: string; checkpoint: string }[] = [];
    const mk = (resumable: boolean) =>
      defineStep({
        name: resumable ? "resumable" : "plain",
        config: {},
        resumable,
        fn: async (ctx) => {
          const ck = path.join(ctx.outputPath, "checkpoint");
          seen.push({ staging: path.basename(ctx.outputPath), checkpoint: await fs.readFile(ck, "utf8").catch(() => "none") });
        },
      });
    for (const resumable of [true, false]) {
      seen.length = 0;
      const g = resolveGraph([mk(resumable)], prefix);
      const meta = metaDir(g.steps[0].outputPath);
      // A runner on another host held token 7, wrote a checkpoint, and vanished (its lease expired).
      await fs.mkdir(path.join(meta, "staging-7"), { recursive: true });
      await fs.writeFile(path.join(meta, "staging-7", "checkpoint"), "from 7");
      await fs.writeFile(path.join(meta, "lease-7.json"), JSON.stringify({ owner: "gone", token: 7, expiresAt: Date.now() - 1, host: "elsewhere", pid: 1 }));
      await fs.writeFile(path.join(meta, "status.json"), JSON.stringify({ state: "RUNNING", updatedAt: Date.now() - 60_000 }));
      const r = await runGraph(g);
      expect(r.steps[0].outcome).toBe("ran");
      expect(seen).toEqual([{ staging: "staging-8", checkpoint: resumable ? "from 7" : "none" }]);
      expect((await fs.readdir(meta)).filter((n) => n.startsWith("staging"))).toEqual([]);
    }
  });

  it("a holder that lost its lease keeps writing only into its own staging folder", async () => {
    let releaseOld: () => void = () => undefined;
    const oldMayWrite = new Promise<void>((r) => (releaseOld = r));
    let oldWrote: Promise<void> | undefined;
    const stagings: string[] = [];
    const g = resolveGraph(
      [
        defineStep({
          name: "contested",
          config: {},
          fn: async (ctx) => {
            stagings.push(ctx.outputPath);
            if (stagings.length === 1) {
              // First holder: another runner takes the step over; this body is abandoned but keeps going.
              const meta = metaDir(ctx.finalPath);
              const rival = { owner: "rival", token: 2, expiresAt: Date.now() - 1, host: "elsewhere", pid: 1, released: true };
              await fs.writeFile(path.join(meta, "lease-2.json"), JSON.stringify(rival));
              oldWrote = oldMayWrite.then(() => fs.writeFile(path.join(ctx.outputPath, "late.txt"), "from the old holder").catch(() => undefined));
              await new Promise<void>((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
            }
            await fs.writeFile(path.join(ctx.outputPath, "out.txt"), "new holder");
            releaseOld();
            await oldWrote;
          },
        }),
      ],
      prefix,
    );
    const first = await runGraph(g, { leaseTtlMs: 300 });
    expect(first.steps[0].outcome).toBe("failed");
    const second = await runGraph(g);
    expect(second.steps[0].outcome).toBe("ran");
    expect(path.basename(stagings[0])).toBe("staging-1");
    expect(path.basename(stagings[1])).toBe("staging-3");
    expect((await fs.readdir(g.steps[0].outputPath)).sort()).toEqual(["out.txt"]);
  });

  it("a publish interrupted by a crash is completed by the next run from its journal, without running the step", async () => {
    for (const renamed of [false, true]) {
      let ran = 0;
      const mk = () => defineStep({ name: renamed ? "train2" : "train", config: {}, resumable: true, fn: () => void ran++ });
      const g = resolveGraph([mk()], prefix);
      const out = g.steps[0].outputPath;
      const meta = metaDir(out);
      // The state a runner (on another host, lease expired) leaves when it dies mid-publish: the
      // journal written, its complete staging folder renamed to the output folder or not yet.
      const staged = path.join(meta, "staging-4");
      await fs.mkdir(path.join(staged, "checkpoints", "step-10"), { recursive: true });
      await fs.writeFile(path.join(staged, "checkpoints", "step-10", "weights"), "w");
      await fs.writeFile(path.join(staged, "final.txt"), "done");
      if (renamed) await fs.rename(staged, out);
      await fs.writeFile(path.join(meta, "lease-4.json"), JSON.stringify({ owner: "gone", token: 4, expiresAt: Date.now() - 1, host: "elsewhere", pid: 1 }));
      await fs.writeFile(path.join(meta, "status.json"), JSON.stringify({ state: "RUNNING", updatedAt: Date.now() - 60_000, token: 4 }));
      await fs.writeFile(path.join(meta, "publish.json"), JSON.stringify({ token: 4, staging: "staging-4", result: { steps: 10 } }));
      expect((await planRun(g)).entries[0].reason).toMatch(/publish pending/);
      expect((await listPrefix(prefix)).find((e) => e.outputPath === out)?.publishPending).toBe(true);

      const r = await runGraph(g);
      expect(r.steps[0].outcome).toBe("ran");
      expect(r.steps[0].result).toEqual({ steps: 10 });
      expect(ran).toBe(0);
      expect(await fs.readFile(path.join(out, "checkpoints", "step-10", "weights"), "utf8")).toBe("w");
      expect(await fs.readFile(path.join(out, "final.txt"), "utf8")).toBe("done");
      const st = await readStatus(out);
      expect(st?.state).toBe("SUCCESS");
      expect(st?.result).toEqual({ steps: 10 });
      expect((await fs.readdir(meta)).filter((n) => n.startsWith("staging") || n === "publish.json")).toEqual([]);
      expect((await listPrefix(prefix)).find((e) => e.outputPath === out)?.publishPending).toBe(false);
      // And it counts as done: the next run skips it.
      expect((await runGraph(resolveGraph([mk()], prefix))).steps[0].outcome).toBe("skipped");
      expect(ran).toBe(0);
    }
  });

  it("a cancelled run marks the running step and its dependants CANCELLED; plan says where a resumable step resumes", async () => {
    const controller = new AbortController();
    const train = defineStep({
      name: "train",
      config: {},
      resumable: true,
      fn: async (ctx) => {
        await fs.mkdir(path.join(ctx.outputPath, "checkpoints", "step-3"), { recursive: true });
        await fs.writeFile(path.join(ctx.outputPath, "checkpoints", "step-3", "metadata.json"), "{}");
        await fs.mkdir(path.join(ctx.outputPath, "checkpoints", "step-4"), { recursive: true }); // incomplete: no metadata.json
        controller.abort();
        await new Promise<void>((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
      },
    });
    const evaluate = defineStep({ name: "evaluate", config: { ck: outputOf(train) }, fn: () => undefined });
    const g = resolveGraph([evaluate], prefix);
    const r = await runGraph(g, { signal: controller.signal });
    expect(r.steps.map((s) => [s.name, s.outcome])).toEqual([
      ["train", "cancelled"],
      ["evaluate", "cancelled"],
    ]);
    expect((await readStatus(g.byName.get("train")!.outputPath))?.state).toBe("CANCELLED");
    expect((await readStatus(g.byName.get("evaluate")!.outputPath))?.state).toBe("CANCELLED");
    const plan = await planRun(g);
    expect(plan.byName.get("train")!.reason).toBe("CANCELLED last time; would rerun; would resume from step-3 (its checkpoint in staging-1)");
    expect(plan.byName.get("evaluate")!.reason).toMatch(/^CANCELLED last time \(dependency train was cancelled\); would rerun$/);
  });

  it("a step that failed under another runner during this run is not run again, nor are its dependants", async () => {
    let ran = 0;
    const s = defineStep({ name: "s", config: {}, fn: () => void ran++ });
    const after = defineStep({ name: "after", config: { s: outputOf(s) }, fn: () => void ran++ });
    const g = resolveGraph([after], prefix);
    const meta = metaDir(g.byName.get("s")!.outputPath);
    await fs.mkdir(meta, { recursive: true });
    const lease = { owner: "other", token: 1, expiresAt: Date.now() + 60_000, host: "elsewhere", pid: 1 };
    await fs.writeFile(path.join(meta, "lease-1.json"), JSON.stringify(lease));
    await fs.writeFile(path.join(meta, "status.json"), JSON.stringify({ state: "RUNNING", updatedAt: Date.now() }));
    const events: string[] = [];
    const running = runGraph(g, { pollMs: 20, onEvent: (e) => e.type === "step" && events.push(e.state) });
    const deadline = Date.now() + 5000;
    while (!events.includes("waiting") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    // The other runner's attempt fails: FAILED, then it releases.
    await writeFileAtomic(
      path.join(meta, "status.json"),
      JSON.stringify({ state: "FAILED", updatedAt: Date.now(), finishedAt: Date.now(), owner: "other", runId: "theirs", error: "boom" }),
      META_WRITE,
    );
    await writeFileAtomic(path.join(meta, "lease-1.json"), JSON.stringify({ ...lease, released: true }), META_WRITE);
    const r = await running;
    expect(ran).toBe(0);
    const byName = Object.fromEntries(r.steps.map((x) => [x.name, x]));
    expect(byName.s.outcome).toBe("failed");
    expect(byName.s.error).toMatch(/failed under another runner \(other\) during this run: boom/);
    expect(byName.after.outcome).toBe("dep_failed");

    // A failure from before this run started is retried as usual.
    const again = await runGraph(resolveGraph([after], prefix));
    expect(again.ok).toBe(true);
    expect(ran).toBe(2);
  });

  it("a resumable step keeps its staging folder across a failed attempt", async () => {
    let attempt = 0;
    const mk = () =>
      defineStep({
        name: "train",
        config: {},
        resumable: true,
        fn: async (ctx) => {
          attempt++;
          const ck = path.join(ctx.outputPath, "checkpoint");
          const seen = await fs.readFile(ck, "utf8").catch(() => "none");
          await fs.writeFile(ck, `attempt ${attempt}`);
          if (attempt === 1) throw new Error("crash");
          return { resumedFrom: seen };
        },
      });
    expect((await runGraph(resolveGraph([mk()], prefix))).ok).toBe(false);
    const r = await runGraph(resolveGraph([mk()], prefix));
    expect(r.steps[0].result).toEqual({ resumedFrom: "attempt 1" });
  });
});
