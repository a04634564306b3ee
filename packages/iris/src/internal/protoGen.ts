// Regenerates the TypeScript types of the wire contract (proto/iris/v1/*.proto) with
// proto-loader-gen-types. `pnpm --filter @marin/iris gen` runs this file; protoGen.test.ts runs
// it into a temp dir and compares, so committed types cannot go stale.
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The package root (packages/iris); generation runs there so file headers are stable. */
export const IRIS_PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The .proto files that define services (types.proto comes in through their imports). */
export const PROTO_ENTRY_FILES = ["iris/v1/controller.proto", "iris/v1/worker.proto"] as const;

/**
 * The options shared by the generator and the runtime loader (`loadIrisProto`): they must agree,
 * or the generated types would lie about the decoded objects.
 */
export const PROTO_LOADER_OPTIONS = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
} as const;

/** Writes the generated types for every proto under `outDir` (emptied first). */
export function generateProtoTypes(outDir: string): void {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const require = createRequire(import.meta.url);
  const bin = path.join(path.dirname(require.resolve("@grpc/proto-loader/package.json")), "build/bin/proto-loader-gen-types.js");
  const args = [
    bin,
    "--longs=Number",
    "--enums=String",
    "--defaults",
    "--oneofs",
    "--includeComments",
    "--grpcLib=@grpc/grpc-js",
    "--importFileExtension=.ts",
    "-I",
    "proto",
    "-O",
    outDir,
    ...PROTO_ENTRY_FILES,
  ];
  const r = spawnSync(process.execPath, args, { cwd: IRIS_PACKAGE_ROOT, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`proto-loader-gen-types failed (${r.status}): ${r.stderr}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  generateProtoTypes(path.join(IRIS_PACKAGE_ROOT, "src/internal/generated"));
  console.log("generated src/internal/generated");
}
