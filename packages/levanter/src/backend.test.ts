// Backend selection and the matMul calibration (the wasm kernels: kernels/wasm/wasmKernels.test.ts).
import * as tf from "@tensorflow/tfjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseBackendName, selectBackend } from "./backend.ts";
import { measureMatMulGflops } from "./kernels/profile.ts";
import { LevanterError } from "./errors.ts";

describe("selectBackend", () => {
  let previous: string | undefined;
  beforeAll(() => {
    previous = process.env.LEVANTER_LOG;
    process.env.LEVANTER_LOG = "silent";
  });
  afterAll(() => {
    process.env.LEVANTER_LOG = previous;
  });

  it("takes the first backend that loads and says why each earlier one was skipped", async () => {
    const sel = await selectBackend();
    const order = ["tensorflow-gpu", "tensorflow", "native", "wasm", "cpu"];
    // Without libtensorflow (these machines) that is wasm; with it, a native backend. Either way
    // every earlier candidate is listed with a reason.
    expect(order.indexOf(sel.name)).toBeLessThanOrEqual(order.indexOf("wasm"));
    expect(sel.skipped.map((s) => s.name)).toEqual(order.slice(0, order.indexOf(sel.name)));
    for (const s of sel.skipped) expect(s.reason.length).toBeGreaterThan(0);
    expect(tf.getBackend()).toBe(sel.tfBackend);
  });

  it("honours a forced backend and rejects an unavailable or unknown one", async () => {
    expect((await selectBackend({ force: "cpu" })).name).toBe("cpu");
    expect(tf.getBackend()).toBe("cpu");
    // @tensorflow/tfjs-node is deliberately not a dependency of this package, so it cannot load.
    await expect(selectBackend({ force: "tensorflow" })).rejects.toThrow(LevanterError);
    expect(() => parseBackendName("gpu")).toThrow(/LEVANTER_BACKEND: expected one of/);
  });
});

describe("measureMatMulGflops", () => {
  it("measures a positive rate and leaks no tensors", async () => {
    await selectBackend({ force: "wasm" });
    const before = tf.memory().numTensors;
    const g = measureMatMulGflops(64, 32, 64, 3);
    expect(g.wall).toBeGreaterThan(0);
    expect(g.cpu).toBeGreaterThan(0);
    expect(tf.memory().numTensors).toBe(before);
  });
});
