// AdamW against hand-computed updates: decay mask, gradient clipping, saved and restored scalars.
import { tf } from "../tf.ts";
import { beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { AdamW, type AdamWOptions } from "./adamw.ts";

const opts: AdamWOptions = { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1, maxGradNorm: 0, decayMask: (n) => n !== "bias" };

function params(): Map<string, tf.Variable> {
  return new Map([
    ["w", tf.variable(tf.tensor1d([0.5, -1.0, 2.0]))],
    ["bias", tf.variable(tf.tensor1d([0.25]))],
  ]);
}

const gradsAt = (k: number) =>
  new Map<string, tf.Tensor>([
    ["w", tf.tensor1d([0.1 * k, -0.2, 0.3 / k])],
    ["bias", tf.tensor1d([0.05 * k])],
  ]);

describe("AdamW", () => {
  beforeAll(async () => {
    await selectBackend({ force: "wasm" });
  });

  it("follows the AdamW formulas, decaying only masked parameters", () => {
    const p = params();
    const opt = new AdamW(p, opts);
    const ref = { w: [0.5, -1.0, 2.0], bias: [0.25] } as Record<string, number[]>;
    const m = { w: [0, 0, 0], bias: [0] } as Record<string, number[]>;
    const v = { w: [0, 0, 0], bias: [0] } as Record<string, number[]>;
    for (let k = 1; k <= 3; k++) {
      const g = gradsAt(k);
      const lr = 0.01 * k;
      for (const name of ["w", "bias"]) {
        const gv = Array.from(g.get(name)!.dataSync());
        ref[name] = ref[name]!.map((x, i) => {
          m[name]![i] = 0.9 * m[name]![i]! + 0.1 * gv[i]!;
          v[name]![i] = 0.95 * v[name]![i]! + 0.05 * gv[i]! ** 2;
          const update = m[name]![i]! / (1 - 0.9 ** k) / (Math.sqrt(v[name]![i]! / (1 - 0.95 ** k)) + 1e-8);
          return x - lr * (update + (name === "w" ? 0.1 * x : 0));
        });
      }
      opt.apply(g, lr);
      tf.dispose([...g.values()]);
    }
    for (const name of ["w", "bias"]) {
      const got = Array.from(p.get(name)!.dataSync());
      got.forEach((x, i) => expect(x).toBeCloseTo(ref[name]![i]!, 5));
    }
    expect(opt.step).toBe(3);
  });

  it("clips to the global norm", () => {
    const p = new Map([["w", tf.variable(tf.zeros([2]))]]);
    const opt = new AdamW(p, { ...opts, maxGradNorm: 1, weightDecay: 0 });
    const norm = opt.apply(new Map([["w", tf.tensor1d([3, 4])]]), 0.1);
    expect(norm).toBeCloseTo(5, 5);
  });

  it("restores its whole state bit for bit: the continued run is identical", () => {
    const a = params();
    const optA = new AdamW(a, opts);
    for (let k = 1; k <= 5; k++) optA.apply(gradsAt(k), 1e-3);
    const saved = optA.state();
    const savedParams = new Map([...a].map(([n, p]) => [n, p.dataSync().slice()]));
    const json = JSON.parse(JSON.stringify(saved.scalars)) as typeof saved.scalars;
    for (let k = 6; k <= 9; k++) optA.apply(gradsAt(k), 1e-3);

    const b = params();
    for (const [n, p] of b) p.assign(tf.tensor(savedParams.get(n)!, p.shape));
    const optB = new AdamW(b, opts);
    optB.load(saved.arrays, json);
    for (let k = 6; k <= 9; k++) optB.apply(gradsAt(k), 1e-3);
    for (const [n, p] of a) expect(Buffer.from(b.get(n)!.dataSync().buffer)).toEqual(Buffer.from(p.dataSync().buffer));
    expect(optB.state().scalars).toEqual(optA.state().scalars);
  });
});
