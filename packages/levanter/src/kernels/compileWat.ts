// Dev-time only (wabt is a devDependency): compiles the kernels' WebAssembly text to the base64
// module that src/kernels/matmulWasm.ts ships. Used by scripts/buildWasm.ts and by the staleness
// test; nothing at run time imports it.
import { readFile } from "node:fs/promises";
import wabtInit from "wabt";

export const WAT_PATH = new URL("./matmul.wat", import.meta.url);
export const GENERATED_PATH = new URL("./matmulWasm.ts", import.meta.url);

// How matmul.wat imports tfjs-backend-wasm's heap.
const MEMORY_IMPORT = '(import "env" "memory" (memory 1))';
// The shared-memory variant runs on the GEMM thread pool's memory (src/kernels/gemmPool.ts).
const SHARED_MEMORY_IMPORT = '(import "env" "memory" (memory 1 65536 shared))';

/** The generated TypeScript source for the current matmul.wat. */
export async function generatedSource(): Promise<string> {
  const wabt = await wabtInit();
  const text = await readFile(WAT_PATH, "utf8");
  if (!text.includes(MEMORY_IMPORT)) throw new Error(`matmul.wat must import its memory as ${MEMORY_IMPORT}`);
  const compile = (source: string) => {
    const mod = wabt.parseWat("matmul.wat", source, { simd: true, threads: true });
    try {
      const { buffer } = mod.toBinary({ log: false, write_debug_names: false });
      new WebAssembly.Module(buffer); // validates (wabt's own validator rejects shared memories)
      const lines =
        Buffer.from(buffer)
          .toString("base64")
          .match(/.{1,100}/g) ?? [];
      return lines.map((l) => `  "${l}"`).join(" +\n") + ";";
    } finally {
      mod.destroy();
    }
  };
  return [
    "// GENERATED from matmul.wat by `pnpm --filter @marin/levanter build:wasm`; do not edit.",
    "// src/kernels/batchMatMul.test.ts fails when this is stale.",
    "",
    "/** matmul.wat importing a plain memory (tfjs-backend-wasm's heap). */",
    "export const MATMUL_WASM_BASE64 =",
    compile(text),
    "",
    "/** matmul.wat importing a shared memory (the GEMM thread pool's). */",
    "export const MATMUL_SHARED_WASM_BASE64 =",
    compile(text.replace(MEMORY_IMPORT, SHARED_MEMORY_IMPORT)),
    "",
  ].join("\n");
}
