// Tests of the wire codec: job specs and entrypoints through real protobuf encoding and back.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { LaunchJobRequest__Output } from "./generated/iris/v1/LaunchJobRequest.ts";
import { loadIrisProto } from "./rpc.ts";
import type { RunAttempt__Output } from "./generated/iris/v1/RunAttempt.ts";
import { entrypointFromWire, entrypointToWire, jobSpecFromWire, jobSpecToWire } from "./codec.ts";
import { normalizeJobSpec } from "../jobSpec.ts";
import type { JobSpecInput } from "../jobSpec.ts";

const word = fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/);

const specArb: fc.Arbitrary<JobSpecInput> = fc.record(
  {
    entrypoint: fc.oneof(
      fc.record({ command: fc.array(fc.string(), { minLength: 1, maxLength: 4 }), cwd: fc.constantFrom("/tmp", "/work") }, { requiredKeys: ["command"] }),
      fc.record({ module: fc.constantFrom("/abs/mod.ts", "file:///abs/mod.ts"), export: word, args: fc.jsonValue() }, { requiredKeys: ["module", "export"] }),
    ),
    replicas: fc.integer({ min: 1, max: 50 }),
    gang: fc.boolean(),
    resources: fc.record(
      {
        cpuMillis: fc.integer({ min: 0, max: 64_000 }),
        memoryBytes: fc.integer({ min: 0, max: 2 ** 40 }),
        devices: fc.array(fc.record({ kind: word, count: fc.integer({ min: 1, max: 8 }) }), { maxLength: 2 }),
      },
      { requiredKeys: [] },
    ),
    constraints: fc.array(
      fc.oneof(
        fc.record({ key: word, op: fc.constantFrom("EQ" as const, "NE" as const), value: word }),
        fc.record({ key: word, op: fc.constantFrom("GT" as const, "LT" as const), value: fc.integer().map(String) }),
        fc.record({ key: word, op: fc.constant("IN" as const), values: fc.array(word, { minLength: 1, maxLength: 3 }) }),
        fc.record({ key: word, op: fc.constant("EXISTS" as const) }),
      ),
      { maxLength: 3 },
    ),
    env: fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,6}$/), fc.string(), { maxKeys: 3 }),
    ports: fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/), { maxLength: 3 }),
    timeoutMs: fc.integer({ min: 0, max: 10 ** 9 }),
    maxRetriesFailure: fc.integer({ min: 0, max: 5 }),
    maxRetriesPreemption: fc.integer({ min: 0, max: 100 }),
    maxTaskFailures: fc.integer({ min: 0, max: 5 }),
    priority: fc.integer({ min: -10, max: 10 }),
  },
  { requiredKeys: ["entrypoint"] },
);

describe("job specs on the wire", () => {
  it("survive encode → protobuf → decode with every field and default intact", () => {
    const launch = loadIrisProto().ControllerService.service.LaunchJob;
    fc.assert(
      fc.property(specArb, (spec) => {
        const bytes = launch.requestSerialize({ spec: jobSpecToWire(spec, "/u/j") });
        const decoded = launch.requestDeserialize(bytes) as LaunchJobRequest__Output;
        const back = normalizeJobSpec(jobSpecFromWire(decoded.spec!), decoded.spec!.name);
        // JSON args: -0 and undefined members do not survive JSON, as for any JSON payload.
        expect(JSON.parse(JSON.stringify(back))).toEqual(JSON.parse(JSON.stringify(normalizeJobSpec(spec, "/u/j"))));
      }),
      { numRuns: 200 },
    );
  });

  it("keeps budget defaults apart from explicit zeros", () => {
    const launch = loadIrisProto().ControllerService.service.LaunchJob;
    const roundTrip = (spec: JobSpecInput) => {
      const d = launch.requestDeserialize(launch.requestSerialize({ spec: jobSpecToWire(spec, "/u/j") })) as LaunchJobRequest__Output;
      return normalizeJobSpec(jobSpecFromWire(d.spec!), "/u/j");
    };
    const base = { entrypoint: { command: ["true"] } };
    expect(roundTrip(base)).toMatchObject({ maxRetriesFailure: 0, maxRetriesPreemption: 10, maxTaskFailures: 0, replicas: 1, resources: { cpuMillis: 1000 } });
    expect(roundTrip({ ...base, maxRetriesPreemption: 0, resources: { cpuMillis: 0 } })).toMatchObject({ maxRetriesPreemption: 0, resources: { cpuMillis: 0 } });
  });

  it("sends explicit zeros and negatives as given, so the controller's validation rejects them", () => {
    const launch = loadIrisProto().ControllerService.service.LaunchJob;
    const decode = (spec: JobSpecInput) =>
      jobSpecFromWire((launch.requestDeserialize(launch.requestSerialize({ spec: jobSpecToWire(spec, "/u/j") })) as LaunchJobRequest__Output).spec!);
    const base = { entrypoint: { command: ["true"] } };
    expect(() => normalizeJobSpec(decode({ ...base, replicas: 0 }), "/u/j")).toThrow(/replicas/);
    expect(() => normalizeJobSpec(decode({ ...base, resources: { cpuMillis: -1 } }), "/u/j")).toThrow(/resources\.cpuMillis/);
    // No entrypoint at all travels as none, and is named.
    expect(() => normalizeJobSpec(decode({} as JobSpecInput), "/u/j")).toThrow(/entrypoint/);
  });
});

describe("entrypoints from client to worker", () => {
  it("reach the worker as the entrypoint the client sent", () => {
    const { WorkerControlService } = loadIrisProto();
    const reconcile = WorkerControlService.service.Reconcile;
    fc.assert(
      fc.property(
        fc.oneof(
          fc.record({ command: fc.array(fc.string(), { minLength: 1, maxLength: 3 }), cwd: fc.constantFrom("/tmp", "/w") }, { requiredKeys: ["command"] }),
          fc.record({ module: fc.constant("/m.ts"), export: word, args: fc.jsonValue() }, { requiredKeys: ["module", "export"] }),
        ),
        (ep) => {
          const bytes = reconcile.responseSerialize({ run: [{ attemptUid: "u", entrypoint: entrypointToWire(ep) }], stop: [], logLinesReceived: {} });
          const run = (reconcile.responseDeserialize(bytes) as { run: RunAttempt__Output[] }).run[0]!;
          expect(JSON.parse(JSON.stringify(entrypointFromWire(run.entrypoint)))).toEqual(JSON.parse(JSON.stringify(ep)));
        },
      ),
      { numRuns: 100 },
    );
  });
});
