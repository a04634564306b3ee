// Checks that the committed generated wire types match the .proto files.
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { IRIS_PACKAGE_ROOT, generateProtoTypes } from "./protoGen.ts";
import { loadIrisProto } from "./rpc.ts";

function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir)
    .flatMap((f) => {
      const p = path.join(dir, f);
      return statSync(p).isDirectory() ? listFiles(p, base) : [path.relative(base, p)];
    })
    .sort();
}

describe("generated wire types", () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "iris-gen-"));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it("match a fresh run of proto-loader-gen-types (run `pnpm --filter @marin/iris gen`)", () => {
    generateProtoTypes(tmp);
    const committed = path.join(IRIS_PACKAGE_ROOT, "src/internal/generated");
    const fresh = listFiles(tmp);
    expect(listFiles(committed)).toEqual(fresh);
    for (const f of fresh) {
      expect(readFileSync(path.join(committed, f), "utf8"), f).toBe(readFileSync(path.join(tmp, f), "utf8"));
    }
  });

  it("load at runtime with both services", () => {
    const proto = loadIrisProto();
    expect(Object.keys(proto.ControllerService.service)).toContain("LaunchJob");
    expect(Object.keys(proto.WorkerControlService.service)).toContain("Reconcile");
  });
});
