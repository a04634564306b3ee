// Controller RPC throughput: LaunchJob and GetJob calls per second against a real controller
// (SQLite file, no workers, 32 calls in flight), side by side with a bare grpc-js unary ping
// server on the same machine (the transport's ceiling).
//
//   pnpm bench iris/rpc [-- --calls N]
import type * as Grpc from "@grpc/grpc-js";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { Controller, IrisClient } from "@marin/iris";
import { integerFlag } from "@marin/iris/toolkit";

// grpc-js is iris's dependency, not the root's: load the very copy iris uses.
const grpc = createRequire(new URL("../../packages/iris/package.json", import.meta.url))("@grpc/grpc-js") as typeof Grpc;

const CALLS = integerFlag("calls", 3000, { min: 1 });
const IN_FLIGHT = 32;

async function rate(label: string, calls: number, one: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < calls) await one(next++);
    }),
  );
  const perSec = calls / ((performance.now() - t0) / 1000);
  console.log(`${label.padEnd(34)} ${perSec.toFixed(0).padStart(7)} calls/s`);
  return perSec;
}

// The baseline: a unary method with JSON payloads and no work behind it.
const json = {
  serialize: (v: unknown) => Buffer.from(JSON.stringify(v)),
  deserialize: (b: Buffer) => JSON.parse(b.toString()) as unknown,
};
const pingService: Grpc.ServiceDefinition = {
  Ping: {
    path: "/bench.Ping/Ping",
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  },
};
const pingServer = new grpc.Server();
pingServer.addService(pingService, { Ping: (call: Grpc.ServerUnaryCall<unknown, unknown>, cb: Grpc.sendUnaryData<unknown>) => cb(null, call.request) });
const pingPort = await new Promise<number>((res, rej) => pingServer.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))));
const PingClient = grpc.makeGenericClientConstructor(pingService, "Ping");
const ping = new PingClient(`127.0.0.1:${pingPort}`, grpc.credentials.createInsecure()) as unknown as Grpc.Client & {
  Ping(req: unknown, cb: (e: Grpc.ServiceError | null, r?: unknown) => void): void;
};
const pingOnce = () => new Promise((res, rej) => ping.Ping({ name: "/bench/x" }, (e, r) => (e ? rej(e) : res(r))));

const dir = mkdtempSync(path.join(os.tmpdir(), "iris-rpc-bench-"));
const controller = await Controller.start({ host: "127.0.0.1", port: 0, dbPath: path.join(dir, "c.sqlite"), token: "t" });
const client = IrisClient.connect(controller.address, { token: "t", user: "bench" });
try {
  await rate("warm-up ping", 500, pingOnce);
  await rate("warm-up GetJob", 200, () => client.list({ prefix: "/bench/none" }));
  console.log(`calls per measurement: ${CALLS}, ${IN_FLIGHT} in flight`);
  const base = await rate("bare grpc-js unary ping", CALLS, pingOnce);
  const launch = await rate("LaunchJob (new job, 1 task)", CALLS, (i) => client.submit({ name: `job-${i}`, entrypoint: { command: ["true"] }, resources: { cpuMillis: 100 } }));
  const get = await rate("GetJob", CALLS, (i) => client.job(`job-${i % 100}`).status());
  console.log(`LaunchJob: ${(launch / base).toFixed(2)}× of bare ping; GetJob: ${(get / base).toFixed(2)}× of bare ping`);
} finally {
  client.close();
  ping.close();
  pingServer.forceShutdown();
  await controller.stop();
  rmSync(dir, { recursive: true, force: true });
}
