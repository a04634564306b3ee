// Security end to end: a real controller with an auth file and a real worker on loopback, real
// task processes. Roles (admin/user/worker/task tokens), job-owned endpoints, and bounded, strict
// input (limits, wrong types, a fast-check flood with the controller staying responsive).
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { IrisError } from "../errors.ts";
import { createWorkerControlClient, loadIrisProto, unary } from "../internal/rpc.ts";
import { LIMITS } from "../jobSpec.ts";
import { waitFor } from "../testing.ts";
import { Worker } from "../worker/worker.ts";
import { sha256Hex } from "./auth.ts";
import { Controller } from "./controller.ts";

const ADMIN = "admin-token-0123456789";
const U1 = "user-one-token-0123456789";
const U2 = "user-two-token-0123456789";
const WORKER = "worker-token-0123456789";

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "OK";
  } catch (e) {
    if (e instanceof IrisError) return e.code;
    throw e;
  }
}

describe("iris security (auth file, roles, task tokens, endpoints)", () => {
  let dir: string;
  let controller: Controller;
  let worker: Worker;
  const clients: IrisClient[] = [];
  const connect = (token: string, user?: string): IrisClient => {
    const c = IrisClient.connect(controller.address, { token, ...(user ? { user } : {}) });
    clients.push(c);
    return c;
  };
  let admin: IrisClient;
  let u1: IrisClient;
  let u2: IrisClient;

  // A job whose task prints its IRIS_AUTH_TOKEN and runs until `release` exists.
  const release = (): string => path.join(dir, "release");
  async function tokenJob(client: IrisClient, name: string): Promise<{ name: string; token: string }> {
    const job = await client.submit({
      name,
      entrypoint: { command: ["sh", "-c", 'echo "TOKEN=$IRIS_AUTH_TOKEN"; while [ ! -f "$1" ]; do sleep 0.05; done', "sh", release()] },
      resources: { cpuMillis: 100 },
    });
    const token = await waitFor(
      `the token printed by ${job.name}`,
      async () => {
        for await (const e of job.logs()) {
          const m = /^TOKEN=(.*)$/.exec(e.line);
          if (m) return m[1];
        }
        return undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    return { name: job.name, token };
  }

  beforeAll(async () => {
    delete process.env.IRIS_USER;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-sec-"));
    const authFile = path.join(dir, "auth.yaml");
    fs.writeFileSync(
      authFile,
      [
        "tokens:",
        `  - { user: root, role: admin, sha256: ${sha256Hex(ADMIN)} }`,
        `  - { user: u1, role: user, token: ${U1} }`,
        `  - { user: u2, role: user, sha256: ${sha256Hex(U2)} }`,
        `  - { user: w1, role: worker, sha256: ${sha256Hex(WORKER)} }`,
        "",
      ].join("\n"),
    );
    controller = await Controller.start({ host: "127.0.0.1", port: 0, dbPath: path.join(dir, "c.sqlite"), authFile, endpointTtlMs: 1500, workerTimeoutMs: 5000 });
    worker = await Worker.start({ controller: controller.address, token: WORKER, cpuMillis: 4000, memoryBytes: 2 * 1024 ** 3 });
    await worker.registered;
    admin = connect(ADMIN);
    u1 = connect(U1);
    u2 = connect(U2);
  });
  afterAll(async () => {
    fs.writeFileSync(release(), "");
    for (const c of clients) c.close();
    await worker?.stop();
    await controller?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("an unknown token is UNAUTHENTICATED", async () => {
    const anon = connect("not-a-known-token-at-all");
    expect(await codeOf(anon.list())).toBe("UNAUTHENTICATED");
    expect(await codeOf(anon.submit({ name: "/u1/intruder", entrypoint: { command: ["true"] } }))).toBe("UNAUTHENTICATED");
    expect((await admin.list()).map((j) => j.name)).not.toContain("/u1/intruder");
  });

  it("a worker token cannot LaunchJob (workers only use the worker API)", async () => {
    const w = connect(WORKER, "w1");
    const err = await w.submit({ name: "/w1/evil", entrypoint: { command: ["true"] } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IrisError);
    expect((err as IrisError).code).toBe("PERMISSION_DENIED");
    expect((err as IrisError).message).toMatch(/worker token may not call LaunchJob/);
    expect(await codeOf(w.list())).toBe("PERMISSION_DENIED");
    // A user token cannot use the worker API.
    const wc = createWorkerControlClient(controller.address, { token: U1 });
    try {
      expect(await codeOf(unary(wc, "registerWorker", { workerId: "fake", host: "x", attributes: {}, capacity: { cpuMillis: 1000 } }))).toBe("PERMISSION_DENIED");
    } finally {
      wc.close();
    }
  });

  it("the job's recorded user comes from the token: bare names go under it, other roots are refused", async () => {
    const job = await u1.submit({ name: "named", entrypoint: { command: ["true"] }, resources: { cpuMillis: 100 } });
    expect(job.name).toBe("/u1/named");
    expect(await codeOf(u1.submit({ name: "/u2/named", entrypoint: { command: ["true"] } }))).toBe("PERMISSION_DENIED");
    // A client that claims another user gets no further.
    const liar = connect(U1, "u2");
    expect(await codeOf(liar.submit({ name: "claimed", entrypoint: { command: ["true"] } }))).toBe("PERMISSION_DENIED");
    // Users see all jobs.
    expect((await u2.job("/u1/named").wait({ timeoutMs: 30_000 })).state).toBe("SUCCEEDED");
    // The admin shorthand's user places bare names under its own user.
    expect((await admin.submit({ name: "mine", entrypoint: { command: ["true"] }, resources: { cpuMillis: 100 } })).name).toBe("/root/mine");
  });

  it("a user cannot terminate another user's job; its owner and admins can", async () => {
    const a = await u1.submit({ name: "victim", entrypoint: { command: ["sleep", "30"] }, resources: { cpuMillis: 100 } });
    const err = await u2.terminate("/u1/victim").catch((e: unknown) => e);
    expect((err as IrisError).code).toBe("PERMISSION_DENIED");
    expect((await a.status()).state).not.toBe("KILLED");
    await u1.terminate("victim");
    expect((await a.wait({ timeoutMs: 20_000 })).state).toBe("KILLED");
    const b = await u2.submit({ name: "other", entrypoint: { command: ["sleep", "30"] }, resources: { cpuMillis: 100 } });
    await admin.terminate(b.name);
    expect((await b.wait({ timeoutMs: 20_000 })).state).toBe("KILLED");
  });

  it("a task token acts only within its job tree, is not the worker's, and stops working when its attempt ends", async () => {
    const t = await tokenJob(u1, "tasky");
    expect(t.token).toMatch(/^iris-task\./);
    expect(t.token).not.toBe(WORKER);
    const other = await u1.submit({ name: "bystander", entrypoint: { command: ["sleep", "30"] }, resources: { cpuMillis: 100 } });
    const task = connect(t.token, "u1");
    // It may submit children and read.
    const child = await task.submit({ name: `${t.name}/child`, entrypoint: { command: ["true"] }, resources: { cpuMillis: 100 } });
    expect((await child.wait({ timeoutMs: 30_000 })).state).toBe("SUCCEEDED");
    expect((await task.job(other.name).status()).name).toBe("/u1/bystander");
    await task.reportTaskStatus(`${t.name}/0`, 1, "busy");
    // Nothing else: no sibling or foreign jobs, no terminating others, no reports for them, no worker API.
    expect(await codeOf(task.submit({ name: "/u1/sibling", entrypoint: { command: ["true"] } }))).toBe("PERMISSION_DENIED");
    expect(await codeOf(task.submit({ name: "/u2/evil", entrypoint: { command: ["true"] } }))).toBe("PERMISSION_DENIED");
    expect(await codeOf(task.terminate(other.name))).toBe("PERMISSION_DENIED");
    expect(await codeOf(task.reportTaskStatus(`${other.name}/0`, 0, "hacked"))).toBe("PERMISSION_DENIED");
    const wc = createWorkerControlClient(controller.address, { token: t.token });
    try {
      expect(await codeOf(unary(wc, "registerWorker", { workerId: "fake", host: "x", attributes: {}, capacity: { cpuMillis: 1000 } }))).toBe("PERMISSION_DENIED");
    } finally {
      wc.close();
    }
    // A forged token (right shape, wrong MAC) is unknown.
    const forged = connect(
      t.token.replace(/.$/, (c) => (c === "A" ? "B" : "A")),
      "u1",
    );
    expect(await codeOf(forged.list())).toBe("UNAUTHENTICATED");
    // The attempt ends: its token is dead.
    await u1.terminate(t.name);
    await u1.terminate(other.name);
    expect((await u1.job(t.name).wait({ timeoutMs: 20_000 })).state).toBe("KILLED");
    expect(await codeOf(task.list())).toBe("UNAUTHENTICATED");
  });

  it("endpoints belong to jobs: another job cannot register, replace or remove a name under it", async () => {
    const owner = await tokenJob(u1, "svc-owner");
    const attacker = await tokenJob(u2, "svc-attacker");
    const ownerClient = connect(owner.token, "u1");
    const attackerClient = connect(attacker.token, "u2");
    const ep = await ownerClient.registerEndpoint("svc", "127.0.0.1:1111");
    expect(ep.name).toBe("/u1/svc-owner/svc");
    // Register/replace under the owner's absolute name: refused, for the attacking task and for another user.
    expect(await codeOf(attackerClient.registerEndpoint("/u1/svc-owner/svc", "127.0.0.1:6666"))).toBe("PERMISSION_DENIED");
    expect(await codeOf(attackerClient.registerEndpoint("/u1/svc-owner/other", "127.0.0.1:6666"))).toBe("PERMISSION_DENIED");
    expect(await codeOf(u2.registerEndpoint("/u1/svc-owner/svc", "127.0.0.1:6666"))).toBe("PERMISSION_DENIED");
    // A sibling job of the same user (its own task token) cannot take it over either.
    const sibling = await tokenJob(u1, "svc-sibling");
    expect(await codeOf(connect(sibling.token, "u1").registerEndpoint("/u1/svc-owner/svc", "127.0.0.1:6666"))).toBe("PERMISSION_DENIED");
    // Remove: refused.
    expect(await codeOf(attackerClient.unregisterEndpoint(ep.endpointId))).toBe("PERMISSION_DENIED");
    expect(await codeOf(u2.unregisterEndpoint(ep.endpointId))).toBe("PERMISSION_DENIED");
    expect((await u2.resolveEndpoint("/u1/svc-owner/svc")).address).toBe("127.0.0.1:1111");
    // A task cannot lease an endpoint to someone else's attempt.
    expect(await codeOf(attackerClient.registerEndpoint("x", "127.0.0.1:1", { attemptId: `${owner.name}/0:1` }))).toBe("PERMISSION_DENIED");
    // The owner's registration dies with its attempt (no TTL needed).
    await u1.terminate(owner.name);
    await u1.job(owner.name).wait({ timeoutMs: 20_000 });
    expect(await codeOf(u2.resolveEndpoint("/u1/svc-owner/svc"))).toBe("NOT_FOUND");
    await u2.terminate(attacker.name);
    await u1.terminate(sibling.name);
  });

  it("a registration made outside any job is the user's and expires", async () => {
    const ep = await u1.registerEndpoint("/u1/manual/svc", "127.0.0.1:2222");
    expect((await u2.resolveEndpoint("/u1/manual/svc")).address).toBe("127.0.0.1:2222");
    expect(await codeOf(u2.registerEndpoint("/u1/manual/svc", "127.0.0.1:6666"))).toBe("PERMISSION_DENIED");
    expect(await codeOf(u2.unregisterEndpoint(ep.endpointId))).toBe("PERMISSION_DENIED");
    const gone = await waitFor("the unleased endpoint to expire", async () => (await codeOf(u1.resolveEndpoint("/u1/manual/svc"))) === "NOT_FOUND", {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    expect(gone).toBe(true);
    expect(await u1.listEndpoints("/u1/manual/")).toEqual([]);
  });

  it("reloads the auth file when it changes", async () => {
    const file = path.join(dir, "auth.yaml");
    const u3 = connect("user-three-token-0123456789");
    expect(await codeOf(u3.list())).toBe("UNAUTHENTICATED");
    fs.appendFileSync(file, `  - { user: u3, role: user, sha256: ${sha256Hex("user-three-token-0123456789")} }\n`);
    await waitFor("the new identity to be accepted", async () => (await codeOf(u3.list())) === "OK", { timeoutMs: 10_000, intervalMs: 100 });
    expect(await codeOf(u1.list())).toBe("OK");
  });

  it("bounds endpoint registrations: metadata size and endpoints per job", async () => {
    const t = await tokenJob(u1, "many-endpoints");
    const task = connect(t.token, "u1");
    expect(await codeOf(task.registerEndpoint("big", "127.0.0.1:1", { metadata: { pad: "x".repeat(LIMITS.metadataBytes) } }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(task.registerEndpoint("bad name!", "127.0.0.1:1"))).toBe("INVALID_ARGUMENT");
    for (let i = 0; i < LIMITS.endpointsPerOwner; i++) await task.registerEndpoint(`e${i}`, "127.0.0.1:1");
    const err = await task.registerEndpoint("one-too-many", "127.0.0.1:1").catch((e: unknown) => e);
    expect((err as IrisError).code).toBe("RESOURCE_EXHAUSTED");
    expect((err as IrisError).message).toMatch(/at most 1000/);
    await u1.terminate(t.name);
  }, 120_000);
});

describe("iris bounded, strict input (no workers: nothing fuzzed ever runs)", () => {
  let dir: string;
  let controller: Controller;
  let client: IrisClient;
  const auth = { authorization: `Bearer ${ADMIN}` };
  const post = (method: string, body: string, headers: Record<string, string> = auth): Promise<{ status: number; json: { code?: string; message?: string } }> =>
    fetch(`http://${controller.httpAddress}/api/${method}`, { method: "POST", headers, body }).then(async (r) => ({
      status: r.status,
      json: (await r.json()) as { code?: string },
    }));

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-bounds-"));
    controller = await Controller.start({ host: "127.0.0.1", port: 0, httpPort: 0, dbPath: path.join(dir, "c.sqlite"), token: ADMIN, schedulingTimeoutMs: 0 });
    client = IrisClient.connect(controller.address, { token: ADMIN, user: "fuzz" });
    await client.submit({ name: "probe", entrypoint: { command: ["true"] } });
  });
  afterAll(async () => {
    client?.close();
    await controller?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("refuses values of the wrong type over HTTP instead of coercing them", async () => {
    const spec = (extra: string): string => `{"spec":{"name":"/fuzz/typed","entrypoint":{"command":{"argv":["true"]}}${extra}}}`;
    for (const [extra, field] of [
      [`,"replicas":"abc"`, "replicas"],
      [`,"replicas":true`, "replicas"],
      [`,"replicas":1.5`, "replicas"],
      [`,"gang":"yes"`, "gang"],
      [`,"resources":{"cpuMillis":"NaN"}`, "cpuMillis"],
      [`,"ports":"http"`, "ports"],
      [`,"env":{"A":1}`, "env.A"],
      [`,"bogus":1`, "bogus"],
    ]) {
      const r = await post("LaunchJob", spec(extra!));
      expect(r.status, extra).toBe(400);
      expect(r.json.code).toBe("INVALID_ARGUMENT");
      expect(r.json.message).toContain(field!);
    }
    expect((await post("LaunchJob", spec(`,"replicas":2,"gang":true`))).status).toBe(200);
    // Over gRPC a NaN cpu would be encoded as 0: the client refuses it first.
    expect(await codeOf(client.submit({ name: "nan", entrypoint: { command: ["true"] }, resources: { cpuMillis: Number.NaN } }))).toBe("INVALID_ARGUMENT");
  });

  it("checks the token before reading a body, and caps bodies", async () => {
    // An unauthenticated upload is answered at once, before its (endless) body is sent.
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`http://${controller.httpAddress}/api/LaunchJob`, { method: "POST", headers: { "content-length": String(600 * 1024 * 1024) } }, (res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
        req.destroy();
      });
      req.on("error", (e) => (e.message.includes("socket hang up") || (e as NodeJS.ErrnoException).code === "ECONNRESET" ? undefined : reject(e)));
      req.write(Buffer.alloc(64 * 1024, 0x7b));
    });
    expect(status).toBe(401);
    const big = await post("LaunchJob", `{"spec":{"name":"/fuzz/big","entrypoint":{"command":{"argv":["${"x".repeat(LIMITS.httpBodyBytes)}"]}}}}`);
    expect(big.status).toBe(413);
    expect(big.json.code).toBe("RESOURCE_EXHAUSTED");
    expect((await post("GetJob", `{"name":"/fuzz/probe"}`)).status).toBe(200);
  });

  it("enforces the documented limits with INVALID_ARGUMENT or RESOURCE_EXHAUSTED", async () => {
    const launch = (spec: Record<string, unknown>): Promise<string> =>
      codeOf(unary(client.rpc, "launchJob", { spec: { name: `/fuzz/l${Math.random().toString(36).slice(2)}`, entrypoint: { command: { argv: ["true"] } }, ...spec } }));
    const ports = Array.from({ length: 20_000 }, (_, i) => `p${i}`);
    expect(await launch({ ports })).toBe("INVALID_ARGUMENT");
    expect(await launch({ replicas: LIMITS.replicas + 1 })).toBe("INVALID_ARGUMENT");
    expect(await launch({ env: { PAD: "x".repeat(LIMITS.envBytes + 1) } })).toBe("INVALID_ARGUMENT");
    expect(await launch({ entrypoint: { command: { argv: ["x".repeat(LIMITS.argvBytes + 1)] } } })).toBe("INVALID_ARGUMENT");
    expect(await launch({ name: `/fuzz/${"a".repeat(LIMITS.nameChars)}` })).toBe("INVALID_ARGUMENT");
    expect(await launch({ name: "/fuzz/sp ace" })).toBe("INVALID_ARGUMENT");
    // A 3M-deep args value (an INTERNAL stack overflow once) is refused, by its size; a smaller
    // deep one by its depth, before anything recurses over it.
    const deepArgs = (n: number): Promise<unknown> =>
      unary(client.rpc, "launchJob", { spec: { name: "/fuzz/deep", entrypoint: { module: { module: "/m.ts", exportName: "f", argsJson: "[".repeat(n) + "]".repeat(n) } } } }).catch(
        (e: unknown) => e,
      );
    const huge = (await deepArgs(3_000_000)) as IrisError;
    expect(huge.code).toBe("INVALID_ARGUMENT");
    expect(huge.message).toMatch(/entrypoint\.args: expected at most/);
    const deep = (await deepArgs(100_000)) as IrisError;
    expect(deep.code).toBe("INVALID_ARGUMENT");
    expect(deep.message).toMatch(/nested at most 64/);
    // A spec over the size limit as a whole.
    const values = Array.from({ length: 100 }, () => "v".repeat(LIMITS.stringChars));
    const constraints = Array.from({ length: 3 }, (_, i) => ({ key: `k${i}`, op: "IN", values }));
    expect(await launch({ constraints, env: { PAD: "x".repeat(200 * 1024) } })).toBe("RESOURCE_EXHAUSTED");
    // Status reports are bounded too.
    expect(await codeOf(client.reportTaskStatus("/fuzz/probe/0", 0, "x".repeat(LIMITS.statusTextChars + 1)))).toBe("INVALID_ARGUMENT");
  }, 60_000);

  it("a flood of fuzzed specs and RPC bodies gets clean errors while good requests keep being served", async () => {
    const clean = new Set(["OK", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "ALREADY_EXISTS", "NOT_FOUND", "FAILED_PRECONDITION", "PERMISSION_DENIED"]);
    const cleanHttp = new Set([200, 400, 403, 404, 409, 413, 429]);
    const anyValue = fc.oneof(
      fc.string(),
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string(), { maxLength: 3 }),
      fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }),
    );
    const specArb = fc.record(
      {
        name: fc.oneof(fc.string(), fc.constant("/fuzz/ok"), fc.stringMatching(/^\/fuzz\/[a-z]{1,8}$/)),
        entrypoint: fc.oneof(
          fc.record({ command: fc.record({ argv: fc.array(fc.string(), { maxLength: 4 }), cwd: fc.string() }, { requiredKeys: [] }) }),
          fc.record({ module: fc.record({ module: fc.string(), exportName: fc.string(), argsJson: fc.oneof(fc.json(), fc.string()) }, { requiredKeys: [] }) }),
          anyValue,
        ),
        replicas: fc.oneof(fc.integer({ min: -5, max: 8 }), fc.constant(LIMITS.replicas + 1), anyValue),
        gang: fc.oneof(fc.boolean(), anyValue),
        resources: fc.oneof(fc.record({ cpuMillis: fc.oneof(fc.integer(), fc.double()), memoryBytes: fc.oneof(fc.integer(), fc.string()) }, { requiredKeys: [] }), anyValue),
        env: fc.oneof(fc.dictionary(fc.string(), fc.string(), { maxKeys: 4 }), anyValue),
        ports: fc.oneof(fc.array(fc.string(), { maxLength: 5 }), anyValue),
        constraints: fc.oneof(
          fc.array(fc.record({ key: fc.string(), op: fc.constantFrom("EQ", "IN", "GT", "??"), value: fc.string() }, { requiredKeys: [] }), { maxLength: 3 }),
          anyValue,
        ),
        timeoutMs: fc.oneof(fc.integer(), fc.double(), anyValue),
        priority: fc.oneof(fc.integer(), anyValue),
      },
      { requiredKeys: [] },
    );
    // Wire-typed specs with fuzzed values (all encodable), plus loosely typed ones.
    const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    const wireSpecArb = fc.record(
      {
        name: fc.oneof(fc.string({ maxLength: 600 }), fc.stringMatching(/^\/fuzz\/[a-z]{1,8}(\/[a-z0-9]{1,3})?$/)),
        entrypoint: fc.oneof(
          fc.record({ command: fc.record({ argv: fc.array(fc.string(), { maxLength: 4 }), cwd: fc.string() }) }),
          fc.record({
            module: fc.record({
              module: fc.oneof(fc.string(), fc.constant("/m.ts")),
              exportName: fc.string(),
              argsJson: fc.oneof(fc.json(), fc.string(), fc.constant("[[[[[[[[[[]]]]]]]]]]".repeat(10))),
            }),
          }),
          fc.constant({}),
        ),
        replicas: fc.oneof(fc.integer({ min: -5, max: 8 }), int32),
        gang: fc.boolean(),
        resources: fc.record(
          {
            cpuMillis: fc.oneof(fc.integer({ min: -10, max: 10_000 }), fc.maxSafeInteger()),
            memoryBytes: fc.integer({ min: -10, max: 2 ** 40 }),
            devices: fc.array(fc.record({ kind: fc.string(), count: int32 }), { maxLength: 20 }),
          },
          { requiredKeys: [] },
        ),
        env: fc.dictionary(fc.string({ maxLength: 12 }), fc.string(), { maxKeys: 4 }),
        ports: fc.array(fc.string({ maxLength: 12 }), { maxLength: 70 }),
        constraints: fc.array(
          fc.record({ key: fc.string(), op: fc.constantFrom("EQ", "NE", "IN", "GT", "LT", "EXISTS", "??"), value: fc.string(), values: fc.array(fc.string(), { maxLength: 3 }) }),
          { maxLength: 4 },
        ),
        timeoutMs: fc.maxSafeInteger(),
        priority: int32,
        maxRetriesFailure: int32,
        schedulingTimeoutMs: fc.integer({ min: -1, max: 10_000_000 }),
      },
      { requiredKeys: [] },
    );
    const specs = [...fc.sample(wireSpecArb, { numRuns: 3000, seed: 16 }), ...fc.sample(specArb, { numRuns: 1500, seed: 17 })];
    const bodies = fc.sample(
      fc.oneof(
        fc.json({ depthSize: "medium" }),
        fc.string(),
        specArb.map((s) => JSON.stringify({ spec: s })),
      ),
      { numRuns: 1500, seed: 18 },
    );
    const methods = ["LaunchJob", "GetJob", "ListJobs", "RegisterEndpoint", "ReportTaskStatus", "ListTasks", "TerminateJob"];

    // Good requests, timed, all through the flood.
    const latencies: number[] = [];
    let flooding = true;
    const prober = (async () => {
      while (flooding) {
        const t0 = performance.now();
        expect((await client.job("probe").status()).name).toBe("/fuzz/probe");
        latencies.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    const rssBefore = process.memoryUsage().rss;
    const t0 = performance.now();
    const bad: string[] = [];
    let unencodable = 0;
    const launchDef = loadIrisProto().ControllerService.service.LaunchJob;
    const inFlight = 16;
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        for (let i = next++; i < specs.length; i = next++) {
          // gRPC: the fuzzed object as the wire message, when protobufjs can encode it at all
          // (what it cannot encode never leaves the client).
          try {
            launchDef.requestSerialize({ spec: specs[i] as never });
          } catch {
            unencodable++;
            continue;
          }
          const code = await codeOf(unary(client.rpc, "launchJob", { spec: specs[i] as never }));
          if (!clean.has(code)) bad.push(`grpc ${JSON.stringify(specs[i]).slice(0, 200)} → ${code}`);
        }
      }),
    );
    const grpcSeconds = (performance.now() - t0) / 1000;
    next = 0;
    const t1 = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        for (let i = next++; i < bodies.length; i = next++) {
          const method = methods[i % methods.length]!;
          const r = await post(method, typeof bodies[i] === "string" ? bodies[i]! : JSON.stringify(bodies[i]));
          if (!cleanHttp.has(r.status)) bad.push(`http ${method} ${String(bodies[i]).slice(0, 200)} → ${r.status} ${JSON.stringify(r.json)}`);
        }
      }),
    );
    const httpSeconds = (performance.now() - t1) / 1000;
    flooding = false;
    await prober;
    const rssAfter = process.memoryUsage().rss;
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? NaN;
    console.log(
      `[iris flood] ${specs.length} gRPC specs (${unencodable} not encodable, not sent) in ${grpcSeconds.toFixed(1)} s (${(specs.length / grpcSeconds).toFixed(0)}/s), ` +
        `${bodies.length} HTTP bodies in ${httpSeconds.toFixed(1)} s (${(bodies.length / httpSeconds).toFixed(0)}/s); ` +
        `good request p99 ${p99.toFixed(1)} ms over ${latencies.length} probes; ` +
        `RSS ${(rssBefore / 2 ** 20).toFixed(0)} → ${(rssAfter / 2 ** 20).toFixed(0)} MiB`,
    );
    expect(bad).toEqual([]);
    expect(latencies.length).toBeGreaterThan(5);
    expect(p99).toBeLessThan(2000);
    expect(rssAfter - rssBefore).toBeLessThan(512 * 2 ** 20);
    // Still serving.
    expect((await client.job("probe").status()).name).toBe("/fuzz/probe");
  }, 240_000);
});
