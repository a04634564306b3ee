// importModule and ownExtension (the TypeScript fallback itself runs in test/packaging.e2e.test.ts,
// where the packages run built, without a loader).
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { importModule, ownExtension } from "./moduleLoader.ts";

describe("importModule", () => {
  it("imports a module", async () => {
    const mod = await importModule(new URL("./errors.ts", import.meta.url).href);
    expect(typeof mod.IrisError).toBe("function");
  });

  it("rethrows a failed import", async () => {
    await expect(importModule(pathToFileURL("/nonexistent/x.mjs").href)).rejects.toMatchObject({ code: "ERR_MODULE_NOT_FOUND" });
  });
});

describe("ownExtension", () => {
  it("tells source from built code", () => {
    expect(ownExtension("file:///p/src/a.ts")).toBe(".ts");
    expect(ownExtension("file:///p/dist/a.js")).toBe(".js");
    expect(ownExtension(import.meta.url)).toBe(".ts");
  });
});
