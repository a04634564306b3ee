// Regenerates src/kernels/matmulWasm.ts from src/kernels/matmul.wat.
import { writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { GENERATED_PATH, generatedSource } from "../src/kernels/compileWat.ts";

await writeFile(GENERATED_PATH, await generatedSource());
console.log(`wrote ${fileURLToPath(GENERATED_PATH)}`);
