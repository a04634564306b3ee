// The autoscaler's loop on a fake provider and a fake controller state: adoption after a restart
// (nothing duplicated, nothing submitted again), credentials in 0600 files revoked when the worker
// goes, a provider that refuses to start (its own message, a backoff), and `down`.
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AutoscalerSnapshot } from "../controller/controllerState.ts";
import { Autoscaler, type AutoscalerStateView } from "./autoscaler.ts";
import type { ProvidedWorker, ProviderStartRequest, ScaleGroupConfig, WorkerCredentialIssuer, WorkerProvider } from "./provider.ts";

const GiB = 1024 ** 3;

class FakeProvider implements WorkerProvider {
  readonly kind = "fake";
  readonly workers = new Map<string, ProvidedWorker>();
  readonly requests: ProviderStartRequest[] = [];
  failWith: string | undefined;
  private next = 100;
  start(req: ProviderStartRequest): Promise<ProvidedWorker> {
    if (this.failWith !== undefined) return Promise.reject(new Error(this.failWith));
    this.requests.push(req);
    const w: ProvidedWorker = { providerId: String(this.next++), group: req.group.name, workerId: req.workerId, state: "pending", detail: "fake PENDING", startedAtMs: Date.now() };
    this.workers.set(w.providerId, w);
    return Promise.resolve({ ...w });
  }
  list(): Promise<ProvidedWorker[]> {
    return Promise.resolve([...this.workers.values()].map((w) => ({ ...w })));
  }
  stop(providerId: string): Promise<void> {
    this.workers.delete(providerId);
    return Promise.resolve();
  }
}

class FakeState implements AutoscalerStateView {
  snapshot: AutoscalerSnapshot = { demand: [], workers: [] };
  notes: ReadonlyMap<string, string> = new Map();
  drained: string[] = [];
  autoscalerSnapshot(): AutoscalerSnapshot {
    return this.snapshot;
  }
  setAutoscalerView(view: { notes: ReadonlyMap<string, string> }): void {
    this.notes = view.notes;
  }
  drainWorker(id: string): number {
    this.drained.push(id);
    return 0;
  }
  deregisterWorker(id: string): void {
    this.snapshot = { ...this.snapshot, workers: this.snapshot.workers.filter((w) => w.id !== id) };
  }
}

class FakeIssuer implements WorkerCredentialIssuer {
  readonly live = new Map<string, string>();
  mint(workerId: string): Promise<string> {
    const c = `cred-${workerId}`;
    this.live.set(workerId, c);
    return Promise.resolve(c);
  }
  revoke(workerId: string): Promise<void> {
    this.live.delete(workerId);
    return Promise.resolve();
  }
}

const group: ScaleGroupConfig = {
  name: "cpu",
  provider: "fake",
  minWorkers: 0,
  maxWorkers: 16,
  idleTimeoutMs: 60_000,
  bootTimeoutMs: 300_000,
  priority: 0,
  worker: { cpuMillis: 4000, memoryBytes: 8 * GiB, devices: {}, attributes: {} },
};

const demand3 = {
  jobId: "j1",
  jobName: "/alice/job",
  priority: 0,
  submittedAtMs: 0,
  request: { cpuMillis: 4000, memoryBytes: GiB, devices: {} },
  constraints: [],
  tasks: 3,
  gang: false,
};

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function make(provider: FakeProvider, state: FakeState, issuer: FakeIssuer): Autoscaler {
  return new Autoscaler({ groups: [group], providers: new Map([["fake", provider]]), state, credentials: issuer, controllerAddress: "127.0.0.1:7070", stateDir: dir });
}

describe("Autoscaler", () => {
  it("hands each worker its own credential in a 0600 file, and revokes it when the worker goes", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "iris-as-"));
    const provider = new FakeProvider();
    const state = new FakeState();
    const issuer = new FakeIssuer();
    const a = make(provider, state, issuer);
    state.snapshot = { demand: [demand3], workers: [] };
    await a.runOnce();
    expect(provider.requests).toHaveLength(3);
    for (const r of provider.requests) {
      expect(r.credentialFile).toBe(path.join(dir, "credentials", r.workerId));
      expect(statSync(r.credentialFile).mode & 0o777).toBe(0o600);
      expect(readFileSync(r.credentialFile, "utf8")).toBe(`cred-${r.workerId}`);
    }
    expect(statSync(path.join(dir, "credentials")).mode & 0o777).toBe(0o700);
    expect(state.notes.get("j1")).toBe("waiting for 3 cpu workers to boot");
    // The next round counts them as booting, with the provider's words.
    await a.runOnce();
    expect(provider.requests).toHaveLength(3);
    expect(state.notes.get("j1")).toBe("waiting for 3 cpu workers to boot (fake PENDING)");
    expect(await a.drainAndStopAll()).toBe(3);
    expect(provider.workers.size).toBe(0);
    expect(issuer.live.size).toBe(0);
    for (const r of provider.requests) expect(existsSync(r.credentialFile)).toBe(false);
  });

  it("adopts after a restart what the provider lists: no duplicate, nothing submitted again for covered demand", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "iris-as-"));
    const provider = new FakeProvider();
    const state = new FakeState();
    const issuer = new FakeIssuer();
    const first = make(provider, state, issuer);
    state.snapshot = { demand: [demand3], workers: [] };
    await first.runOnce();
    await first.stop({ keepWorkers: true });
    expect(provider.workers.size).toBe(3);
    // Two of them registered meanwhile; the demand is unchanged.
    const ids = [...provider.workers.values()].map((w) => w.workerId);
    for (const w of provider.workers.values()) w.state = "running";
    state.snapshot = { demand: [demand3], workers: ids.slice(0, 2).map((id) => ({ id, state: "ALIVE", busy: false, registeredAtMs: Date.now() })) };
    const second = make(provider, state, issuer);
    const out = await second.runOnce();
    expect(out.decisions.filter((d) => d.kind === "start")).toEqual([]);
    expect(provider.requests).toHaveLength(3);
    const g = second.status().groups[0];
    expect([g.ready, g.booting, g.pending]).toEqual([2, 1, 0]);
    // More demand than they cover: only the difference is started.
    state.snapshot = { ...state.snapshot, demand: [{ ...demand3, tasks: 5 }] };
    const more = await second.runOnce();
    expect(more.decisions.filter((d) => d.kind === "start").map((d) => d.reason)).toEqual(["+2 cpu for /alice/job"]);
    expect(provider.workers.size).toBe(5);
  });

  it("a provider that refuses to start is a decision with its own message, and the group backs off", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "iris-as-"));
    const provider = new FakeProvider();
    provider.failWith = "sbatch: error: invalid partition specified: nope\n";
    const state = new FakeState();
    const issuer = new FakeIssuer();
    const a = make(provider, state, issuer);
    state.snapshot = { demand: [{ ...demand3, tasks: 1 }], workers: [] };
    await a.runOnce();
    const s = a.status();
    expect(s.decisions.map((d) => d.reason)).toContain("+1 cpu for /alice/job: failed: sbatch: error: invalid partition specified: nope (boot failed 1×, backing off 1 min)");
    expect(s.groups[0].failedBoots).toBe(1);
    expect(issuer.live.size).toBe(0);
    // Backing off: the next round starts nothing and says why.
    provider.failWith = undefined;
    const next = await a.runOnce();
    expect(next.decisions.filter((d) => d.kind === "start")).toEqual([]);
    expect(state.notes.get("j1")).toMatch(/^cpu: boot failed 1×, backing off/);
  });

  it("a registration ends a run of failed boots", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "iris-as-"));
    const provider = new FakeProvider();
    const state = new FakeState();
    const a = make(provider, state, new FakeIssuer());
    state.snapshot = { demand: [{ ...demand3, tasks: 1 }], workers: [] };
    await a.runOnce();
    const [w] = [...provider.workers.values()];
    w.startedAtMs = Date.now() - 10 * 60_000;
    await a.runOnce();
    expect(a.status().groups[0].failedBoots).toBe(1);
    expect(provider.workers.size).toBe(0);
    // Another worker (started by hand through the provider) registers: the count resets.
    provider.failWith = undefined;
    const req = provider.requests[0];
    const again = await provider.start({ ...req, workerId: "cpu-manual" });
    provider.workers.get(again.providerId)!.state = "running";
    state.snapshot = { demand: [], workers: [{ id: "cpu-manual", state: "ALIVE", busy: true, registeredAtMs: Date.now() }] };
    await a.runOnce();
    expect(a.status().groups[0]).toMatchObject({ failedBoots: 0, backoffUntilMs: 0, ready: 1, idle: 0 });
  });
});
