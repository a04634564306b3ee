// Backend selection (see shared/reference/tfjs-on-node.md): which backend loads, and which kernel
// list goes over it (kernels/wasm/register.ts on wasm, then kernels/native/register.ts for
// `native`). Nothing here runs at import time: callers invoke selectBackend() explicitly.
import { tf } from "./tf.ts";
import { toInteger } from "@marin/iris/toolkit";
import { LevanterError } from "./errors.ts";
import { log } from "./internal/log.ts";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { setWasmThreads, wasmThreads } from "./kernels/wasm/batchMatMul.ts";
import { installWasmFixes } from "./kernels/wasm/register.ts";
import { loadNativeAddon, type NativeInfo } from "./kernels/native/addon.ts";
import { installNativeKernels, uninstallNativeKernels } from "./kernels/native/register.ts";

/** The backends levanter knows, in the order {@link selectBackend} tries them. */
export const BACKEND_NAMES = ["tensorflow-gpu", "tensorflow", "native", "wasm", "cpu"] as const;

/** One of {@link BACKEND_NAMES}; `LEVANTER_BACKEND` takes the same values. */
export type TfBackendName = (typeof BACKEND_NAMES)[number];

/** What {@link selectBackend} chose, and why each earlier candidate was skipped. */
export interface BackendSelection {
  name: TfBackendName;
  /** tfjs' own name for the active backend (`tf.getBackend()`). */
  tfBackend: string;
  skipped: { name: TfBackendName; reason: string }[];
  /** Threads running the native kernels or the wasm backend's matrix products (1 on other backends). */
  threads: number;
  /** On `native`: the GEMM engine and micro-kernel in use. */
  native?: Pick<NativeInfo, "gemm" | "isa" | "openblas">;
}

/** Options for {@link selectBackend}. */
export interface SelectBackendOptions {
  /** Force one backend; defaults to `LEVANTER_BACKEND` from the environment, else automatic. */
  force?: TfBackendName;
  /**
   * Threads for the native kernels or the wasm backend's matrix products: defaults to
   * `LEVANTER_THREADS`, else the number of cores. 1 keeps everything on the calling thread.
   * Results are bitwise identical for every value. Ignored by the other backends.
   */
  threads?: number;
}

// Specifiers live in variables so tsc needs no types for packages that may be absent.
const NATIVE_GPU = "@tensorflow/tfjs-node-gpu";
const NATIVE_CPU = "@tensorflow/tfjs-node";

const requireHere = createRequire(import.meta.url);

/**
 * Why an installed tfjs-node(-gpu) cannot load, when its package.json (node-pre-gyp's `binary`
 * section) names where its binding goes and no build of it is there; undefined when it may load.
 * Loading it only to see it throw costs about 0.25 CPU-s (0.6 as an ES import), in every process
 * that picks a backend, on every machine that installed it without libtensorflow (pnpm runs no
 * dependency's download script unless told to).
 */
export function missingBinding(specifier: string, from: NodeJS.Require = requireHere): string | undefined {
  let manifest: string;
  try {
    manifest = from.resolve(`${specifier}/package.json`);
  } catch {
    return undefined; // not installed, or hides its package.json: require() says which
  }
  const { binary } = JSON.parse(fs.readFileSync(manifest, "utf8")) as { binary?: Record<string, unknown> };
  const { module_name: name, module_path: where, napi_versions: versions } = binary ?? {};
  if (typeof name !== "string" || typeof where !== "string" || !Array.isArray(versions)) return undefined;
  const dir = path.dirname(manifest);
  const built = versions.some((v) => fs.existsSync(path.join(dir, where.replaceAll("{napi_build_version}", String(v)), `${name}.node`)));
  return built ? undefined : "installed without its native binding (libtensorflow not downloaded)";
}

async function tryNative(specifier: string): Promise<void> {
  const missing = missingBinding(specifier);
  if (missing !== undefined) throw new Error(missing);
  // require(), not import(), for the reason in tf.ts.
  requireHere(specifier);
  // tfjs-node registers "tensorflow" on the tfjs-core it resolves; if that is another copy than
  // ours, our ops would never see it.
  if (!tf.findBackendFactory("tensorflow")) {
    throw new Error(`${specifier} loaded but registered no "tensorflow" backend on this tfjs-core instance`);
  }
  if (!(await tf.setBackend("tensorflow"))) throw new Error(`the "tensorflow" backend failed to initialise`);
}

let requestedThreads = 1;

async function startWasm(): Promise<void> {
  // Registers the "wasm" factory (tfjs' only way). require(), not import(), for the reason in tf.ts.
  requireHere("@tensorflow/tfjs-backend-wasm");
  if (!(await tf.setBackend("wasm"))) throw new Error(`the "wasm" backend failed to initialise`);
  installWasmFixes();
}

async function tryWasm(): Promise<void> {
  uninstallNativeKernels(); // plain wasm, even after an earlier "native" selection in this process
  await startWasm();
  setWasmThreads(requestedThreads);
}

// levanter's native kernels (native/, an N-API addon) registered over the wasm backend: they work
// on its heap in place, so every kernel they do not replace keeps running as wasm.
async function tryNativeKernels(): Promise<void> {
  const load = loadNativeAddon();
  if (!load.ok) throw new Error(load.reason);
  await startWasm();
  installNativeKernels(load.addon);
  load.addon.setThreads(requestedThreads);
  setWasmThreads(1); // the addon runs the products; no wasm GEMM workers
}

async function tryCpu(): Promise<void> {
  if (!(await tf.setBackend("cpu"))) throw new Error(`the "cpu" backend failed to initialise`);
}

const attempts: Record<TfBackendName, () => Promise<void>> = {
  "tensorflow-gpu": () => tryNative(NATIVE_GPU),
  tensorflow: () => tryNative(NATIVE_CPU),
  native: tryNativeKernels,
  wasm: tryWasm,
  cpu: tryCpu,
};

function reasonOf(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  // tfjs-node(-gpu) installed without its libtensorflow binding (pnpm skips its download script).
  if (/tfjs_binding\.node\) can not be found/.test(msg)) return "installed without its native binding (libtensorflow not downloaded)";
  if (/Cannot find (package|module) '@tensorflow\/tfjs-node/.test(msg)) return "not installed";
  return msg.split("\n")[0]!.slice(0, 300);
}

/**
 * Picks and activates the fastest TensorFlow.js backend that loads: tfjs-node-gpu (optional
 * dependency), tfjs-node (if a user installed it), `native` (levanter's N-API kernels over the
 * wasm backend, when the addon was built), wasm (with {@link installWasmFixes}), then the pure-JS
 * cpu backend. `LEVANTER_BACKEND` (or `force`) pins one and fails if it cannot load.
 * Logs one structured line with the choice and the reason each earlier candidate was skipped.
 *
 * @example const { name } = await selectBackend(); // "wasm" on a machine without libtensorflow
 */
export async function selectBackend(opts: SelectBackendOptions = {}): Promise<BackendSelection> {
  // tfjs prints banners and kernel warnings unless PROD; our logs say what matters.
  tf.env().set("PROD", true);
  const envForce = process.env.LEVANTER_BACKEND?.trim();
  const force = opts.force ?? (envForce ? parseBackendName(envForce) : undefined);
  const envThreads = process.env.LEVANTER_THREADS?.trim();
  requestedThreads = opts.threads ?? (envThreads ? parseThreads(envThreads) : os.availableParallelism());
  const skipped: BackendSelection["skipped"] = [];
  for (const name of BACKEND_NAMES) {
    if (force && name !== force) continue;
    try {
      await attempts[name]();
      const info = name === "native" ? loadNativeAddon() : undefined;
      const ni = info?.ok ? info.addon.info() : undefined;
      const threads = ni ? ni.threads : name === "wasm" ? wasmThreads() : 1;
      const native = ni ? { gemm: ni.gemm, isa: ni.isa, openblas: ni.openblas } : undefined;
      const selection: BackendSelection = { name, tfBackend: tf.getBackend(), skipped, threads, ...(native ? { native } : {}) };
      log("info", "backend selected", { backend: name, forced: force !== undefined, threads, ...(native ? { native } : {}), skipped });
      return selection;
    } catch (e) {
      if (force) {
        throw new LevanterError("BACKEND_UNAVAILABLE", `backend "${name}" (forced) cannot be used: ${reasonOf(e)}`, { cause: e });
      }
      skipped.push({ name, reason: reasonOf(e) });
    }
  }
  throw new LevanterError("BACKEND_UNAVAILABLE", `no TensorFlow.js backend could be initialised: ${JSON.stringify(skipped)}`);
}

/** Validates a backend name (e.g. from `LEVANTER_BACKEND`), throwing `INVALID_CONFIG` naming the choices. */
export function parseBackendName(raw: string): TfBackendName {
  if ((BACKEND_NAMES as readonly string[]).includes(raw)) return raw as TfBackendName;
  throw new LevanterError("INVALID_CONFIG", `LEVANTER_BACKEND: expected one of ${BACKEND_NAMES.join(" | ")}, got "${raw}"`);
}

function parseThreads(raw: string): number {
  const n = toInteger(raw, { min: 1, max: 256 });
  if (n !== undefined) return n;
  throw new LevanterError("INVALID_CONFIG", `LEVANTER_THREADS: expected an integer from 1 to 256, got "${raw}"`);
}
