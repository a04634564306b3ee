// ZeRO-1 steps (ranks own whole tensors: their reduced gradients, norm terms, AdamW moments and
// updates, then an all-gather of the parameters) against one rank with the same micro-batches:
// the same bits every step, on the wasm backend and on the native kernels (real loopback gangs).
import * as tf from "@tensorflow/tfjs";
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
  it("2, 3 and 4 ranks give one rank's parameters, norms and gathered Adam moments at every step", async () => {
    await selectBackend({ force: backend, threads: 1 });
    if (transport === "TCP only") process.env.LEVANTER_DP_SHM = "off";
    const rows = 12;
    const rng = new Rng(3);
    const batches = Array.from({ length: 3 }, () => [Int32Array.from({ length: rows * 8 }, () => rng.int(20)), Int32Array.from({ length: rows * 8 }, () => rng.int(20))] as const);
    // One rank accumulating 12 micro-batches.
    const one = TransformerLm.init(cfg, new Rng(5));
    const oneOpt = new AdamW(one.params, opts);
    const reference: { norm: number; params: string[] }[] = [];
    for (const [x, y] of batches) {
      const { grads } = computeGradients(one, x, y, rows, 1);
      const norm = oneOpt.globalNorm(grads);
      oneOpt.apply(grads, 1e-2, norm);
      tf.dispose([...grads.values()]);
      reference.push({ norm, params: paramBits(one) });
    }
    const moments = [...oneOpt.state().arrays].map(([k, a]) => [k, bits(a)]);
    for (const world of [2, 3, 4]) {
      const gangs = await localGangs(world);
      const models = gangs.map(() => TransformerLm.init(cfg, new Rng(5)));
      try {
        const shards = gangs.map((g, r) => new ShardedOptimizerState(models[r]!, g));
        const opt = shards.map((s, r) => new AdamW(models[r]!.params, { ...opts, owned: s.ownedNames() }));
        // Each rank keeps the moments of its tensors only, and together they own every tensor once.
        expect(opt.flatMap((o) => o.ownedNames).sort()).toEqual([...one.params.keys()].sort());
        for (const [k, [x, y]] of batches.entries()) {
          const norms = await Promise.all(
            gangs.map(async (g, r) => {
              const st = await dataParallelGradients(models[r]!, x, y, rows, 12, g, { zero: shards[r]!.plan });
              expect([...st.grads.keys()].sort()).toEqual([...shards[r]!.ownedNames()].sort());
              const norm = await shards[r]!.globalNorm(opt[r]!, st.grads);
              opt[r]!.apply(st.grads, 1e-2, norm);
              await shards[r]!.gatherParams();
              tf.dispose([...st.grads.values()]);
              return norm;
            }),
          );
          expect(norms, `${world} ranks, step ${k}`).toEqual(norms.map(() => reference[k]!.norm));
          for (const m of models) expect(paramBits(m), `${world} ranks, step ${k}`).toEqual(reference[k]!.params);
        }
        const gathered = await Promise.all(gangs.map((_, r) => shards[r]!.gatherMoments(opt[r]!)));
        expect(gathered.slice(1).every((g) => g === undefined)).toBe(true);
        expect([...opt[0]!.state(gathered[0]!).arrays].map(([k, a]) => [k, bits(a)])).toEqual(moments);
        // Without the others' moments, the state of a sharded optimizer cannot be taken.
        expect(() => opt[0]!.state()).toThrow(/not gathered/);
      } finally {
        await Promise.all(gangs.map((g) => g.close()));
        for (const m of models) m.dispose();
      }
    }
    one.dispose();
    oneOpt.dispose();
  });
});
