// Backend selection and the matMul calibration (the wasm kernels: kernels/wasm/wasmKernels.test.ts).
import { tf } from "./tf.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { missingBinding, parseBackendName, selectBackend } from "./backend.ts";
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

describe("missingBinding", () => {
  // A scratch project with a package laid out as tfjs-node(-gpu) is (node-pre-gyp's `binary`
  // section); its index.js records that it was loaded, which the check must never do.
  let dir: string;
  let from: NodeJS.Require;
  const loaded = (): boolean => fs.existsSync(path.join(dir, "loaded"));
  const install = (name: string, manifest: Record<string, unknown>): string => {
    const pkg = path.join(dir, "node_modules", name);
    fs.mkdirSync(pkg, { recursive: true });
    fs.writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name, version: "1.0.0", main: "index.js", ...manifest }));
    fs.writeFileSync(path.join(pkg, "index.js"), `require("fs").writeFileSync(${JSON.stringify(path.join(dir, "loaded"))}, "");`);
    return pkg;
  };
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "levanter-binding-"));
    from = createRequire(path.join(dir, "index.js"));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const binary = { module_name: "tfjs_binding", module_path: "./lib/napi-v{napi_build_version}", napi_versions: [3, 8] };

  it("names a package installed without its binding, without loading it", () => {
    install("no-binding", { binary });
    expect(missingBinding("no-binding", from)).toBe("installed without its native binding (libtensorflow not downloaded)");
    expect(loaded()).toBe(false);
  });

  it("lets a package with a binding for any of its N-API versions load", () => {
    const pkg = install("with-binding", { binary });
    fs.mkdirSync(path.join(pkg, "lib", "napi-v3"), { recursive: true });
    fs.writeFileSync(path.join(pkg, "lib", "napi-v3", "tfjs_binding.node"), "");
    expect(missingBinding("with-binding", from)).toBeUndefined();
  });

  it("leaves a package without a binary section, or not installed, to require() itself", () => {
    install("plain", {});
    expect(missingBinding("plain", from)).toBeUndefined();
    expect(missingBinding("not-installed-anywhere", from)).toBeUndefined();
    expect(loaded()).toBe(false);
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
