// ZeRO-1 steps (ranks own whole tensors: their reduced gradients, norm terms, AdamW moments and
// updates, then an all-gather of the parameters) against one rank with the same micro-batches:
// the same bits every step, on the wasm backend and on the native kernels (real loopback gangs).
import { tf } from "../tf.ts";
import { afterEach, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { localGangs } from "../internal/testGang.ts";
import { loadNativeAddon } from "../kernels/native/addon.ts";
import { ModelConfigSchema, resolveModelConfig } from "../models/modelConfig.ts";
import { defaultDecayMask, TransformerLm } from "../models/transformer.ts";
import { AdamW, type AdamWOptions } from "../optim/adamw.ts";
import { Rng } from "../rng.ts";
import { computeGradients, dataParallelGradients } from "./gradients.ts";
import { ShardedOptimizerState } from "./sharded.ts";

process.env.LEVANTER_LOG = "silent";
afterEach(() => {
  delete process.env.LEVANTER_DP_SHM;
});
const opts: AdamWOptions = { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1, maxGradNorm: 0.5, decayMask: defaultDecayMask };
const cfg = resolveModelConfig(ModelConfigSchema.parse({ nLayers: 2, dModel: 16, nHeads: 2, seqLen: 8, vocabSize: 20 }));
const bits = (a: ArrayLike<number> & { buffer: ArrayBufferLike; byteOffset: number; byteLength: number }) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("base64");
const paramBits = (m: TransformerLm) => [...m.params.values()].map((p) => bits(p.dataSync() as Float32Array));

const cases: [backend: "wasm" | "native", transport: string][] = [
  ["wasm", "shared memory where the addon loads"],
  ["wasm", "TCP only"],
  ...(loadNativeAddon().ok ? [["native", "shared memory"] as ["native", string]] : []),
];

describe.each(cases)("ZeRO-1 on %s, %s", (backend, transport) => {
  it("2, 3 and 4 ranks give one rank's parameters, norms and gathered Adam moments at every step (12 micro-batches, and one per rank); a 1-rank state resumes on N", async () => {
    await selectBackend({ force: backend, threads: 1 });
    if (transport === "TCP only") process.env.LEVANTER_DP_SHM = "off";
    const rows = 12;
    const rng = new Rng(3);
    const batches = Array.from({ length: 4 }, () => [Int32Array.from({ length: rows * 8 }, () => rng.int(20)), Int32Array.from({ length: rows * 8 }, () => rng.int(20))] as const);
    // One rank accumulating `count` micro-batches: 3 steps, its state, then a 4th step.
    const reference = (count: number) => {
      const one = TransformerLm.init(cfg, new Rng(5));
      const oneOpt = new AdamW(one.params, opts);
      const steps: { norm: number; params: string[] }[] = [];
      let state: ReturnType<AdamW["state"]> | undefined;
      let params: Map<string, Float32Array> | undefined;
      for (const [k, [x, y]] of batches.entries()) {
        if (k === 3) {
          state = oneOpt.state();
          params = new Map([...one.params].map(([n, p]) => [n, (p.dataSync() as Float32Array).slice()]));
        }
        const { grads } = computeGradients(one, x, y, rows, rows / count);
        const norm = oneOpt.globalNorm(grads);
        oneOpt.apply(grads, 1e-2, norm);
        tf.dispose([...grads.values()]);
        steps.push({ norm, params: paramBits(one) });
      }
      one.dispose();
      oneOpt.dispose();
      return { steps, state: state!, params: params!, moments: [...state!.arrays].map(([k, a]) => [k, bits(a)]) };
    };
    for (const world of [2, 3, 4]) {
      for (const count of [12, world]) {
        const ref = reference(count);
        const gangs = await localGangs(world);
        const models = gangs.map(() => TransformerLm.init(cfg, new Rng(5)));
        const what = `${world} ranks, ${count} micro-batches`;
        try {
          const shards = gangs.map((g, r) => new ShardedOptimizerState(models[r]!, g));
          let opt = shards.map((s, r) => new AdamW(models[r]!.params, { ...opts, owned: s.ownedNames() }));
          // Each rank keeps the moments of its tensors only, and together they own every tensor once.
          expect(opt.flatMap((o) => [...o.ownMoments().keys()].filter((k) => k.endsWith("/adam_m")).map((k) => k.slice(0, -"/adam_m".length))).sort()).toEqual(
            [...models[0]!.params.keys()].sort(),
          );
          const step = async (k: number) => {
            const [x, y] = batches[k]!;
            const norms = await Promise.all(
              gangs.map(async (g, r) => {
                const st = await dataParallelGradients(models[r]!, x, y, rows, count, g, { zero: shards[r]!.plan });
                expect([...st.grads.keys()].sort()).toEqual([...shards[r]!.ownedNames()].sort());
                const norm = await shards[r]!.globalNorm(opt[r]!, st.grads);
                opt[r]!.apply(st.grads, 1e-2, norm);
                await shards[r]!.gatherParams();
                tf.dispose([...st.grads.values()]);
                return norm;
              }),
            );
            expect(norms, `${what}, step ${k}`).toEqual(norms.map(() => ref.steps[k]!.norm));
            for (const m of models) expect(paramBits(m), `${what}, step ${k}`).toEqual(ref.steps[k]!.params);
          };
          for (const k of [0, 1, 2]) await step(k);
          const gathered = await Promise.all(gangs.map((_, r) => shards[r]!.gatherMoments(opt[r]!)));
          expect(gathered.slice(1).every((g) => g === undefined)).toBe(true);
          expect([...opt[0]!.state(gathered[0]!).arrays].map(([k, a]) => [k, bits(a)])).toEqual(ref.moments);
          // Without the others' moments, the state of a sharded optimizer cannot be taken.
          expect(() => opt[0]!.state()).toThrow(/not gathered/);
          // Resume on N ranks from the one-rank state after step 3: each rank loads its own
          // tensors' moments from the full state; the next step matches one rank's.
          for (const o of opt) o.dispose();
          opt = shards.map((s, r) => new AdamW(models[r]!.params, { ...opts, owned: s.ownedNames() }));
          for (const [r, o] of opt.entries()) {
            o.load(ref.state.arrays, ref.state.scalars);
            for (const [n, p] of models[r]!.params) tf.tidy(() => p.assign(tf.tensor(ref.params.get(n)!, p.shape)));
            for (const [key, a] of o.ownMoments()) expect(bits(a), key).toBe(bits(ref.state.arrays.get(key)!));
          }
          await step(3);
          for (const o of opt) o.dispose();
        } finally {
          await Promise.all(gangs.map((g) => g.close()));
          for (const m of models) m.dispose();
        }
      }
    }
  });
});

describe("ZeRO-1 with more ranks than tensors", () => {
  it("a rank that owns no tensor still takes part: norm, update, parameter and moment gathers match one rank", async () => {
    await selectBackend({ force: "wasm", threads: 1 });
    const rng = new Rng(11);
    const shapes = [[3, 5], [7]];
    const values = shapes.map((s) => Float32Array.from({ length: s.reduce((a, b) => a * b, 1) }, () => rng.next() - 0.5));
    const grads = shapes.map((s) => Float32Array.from({ length: s.reduce((a, b) => a * b, 1) }, () => rng.next() - 0.5));
    const names = ["a/kernel", "b/bias"];
    // Only `params` of the model is used here: two tensors over three ranks.
    const fakeModel = () => ({ params: new Map(names.map((n, i) => [n, tf.variable(tf.tensor(values[i]!, shapes[i]!), true)])) }) as unknown as TransformerLm;
    const gradMap = (only: ReadonlySet<string>) => new Map(names.filter((n) => only.has(n)).map((n) => [n, tf.tensor(grads[names.indexOf(n)]!, shapes[names.indexOf(n)]!)]));
    const one = fakeModel();
    const oneOpt = new AdamW(one.params, opts);
    const g1 = gradMap(new Set(names));
    const norm = oneOpt.globalNorm(g1);
    oneOpt.apply(g1, 1e-2, norm);
    tf.dispose([...g1.values()]);
    const gangs = await localGangs(3);
    const models = gangs.map(() => fakeModel());
    try {
      const shards = gangs.map((g, r) => new ShardedOptimizerState(models[r]!, g));
      // 15 and 7 elements: the cut nearest a third (7.3) is before the first tensor, so rank 0 —
      // the one that writes checkpoints — owns nothing and gathers every moment.
      expect(shards.map((s) => s.ownedNames().size)).toEqual([0, 1, 1]);
      const opt = shards.map((s, r) => new AdamW(models[r]!.params, { ...opts, owned: s.ownedNames() }));
      const norms = await Promise.all(
        gangs.map(async (_, r) => {
          const g = gradMap(shards[r]!.ownedNames());
          const n = await shards[r]!.globalNorm(opt[r]!, g);
          opt[r]!.apply(g, 1e-2, n);
          await shards[r]!.gatherParams();
          tf.dispose([...g.values()]);
          return n;
        }),
      );
      expect(norms).toEqual([norm, norm, norm]);
      for (const m of models) expect(paramBits(m)).toEqual(paramBits(one));
      const gathered = await Promise.all(gangs.map((_, r) => shards[r]!.gatherMoments(opt[r]!)));
      expect([...opt[0]!.state(gathered[0]!).arrays].map(([k, a]) => [k, bits(a)])).toEqual([...oneOpt.state().arrays].map(([k, a]) => [k, bits(a)]));
      for (const o of opt) o.dispose();
    } finally {
      await Promise.all(gangs.map((g) => g.close()));
      for (const m of [one, ...models]) for (const p of m.params.values()) p.dispose();
      oneOpt.dispose();
    }
  });
});
