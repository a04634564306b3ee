// Tests of the runner spec's check and the runner argv.
import { describe, expect, it } from "vitest";
import { COMMAND_SUPERVISOR_PATH, moduleUrl, parseRunnerSpec, runnerArgv, TASK_RUNNER_PATH } from "./runnerSpec.ts";

describe("parseRunnerSpec", () => {
  it("accepts a module or a command entrypoint and applies the defaults", () => {
    expect(parseRunnerSpec({ entrypoint: { module: "/a.ts", export: "main", args: { n: 1 } }, parentPid: 7 })).toEqual({
      entrypoint: { module: "/a.ts", export: "main", args: { n: 1 } },
      parentPid: 7,
      orphanGraceMs: 2000,
      parentPollMs: 500,
      resultPath: "",
    });
    expect(parseRunnerSpec({ entrypoint: { command: ["ls", "-l"], cwd: "/tmp" }, parentPid: 7, orphanGraceMs: 0 })).toMatchObject({
      entrypoint: { command: ["ls", "-l"], cwd: "/tmp" },
      orphanGraceMs: 0,
    });
  });

  it("names every problem", () => {
    expect(parseRunnerSpec({ entrypoint: { command: [] }, parentPid: -1 })).toEqual({
      problems: ["entrypoint: expected { command } or { module, export } with non-empty strings", "parentPid: expected an integer ≥ 0, got -1"],
    });
    expect(parseRunnerSpec(null)).toMatchObject({ problems: [expect.stringMatching(/^entrypoint: /), expect.stringMatching(/^parentPid: /)] });
    expect(parseRunnerSpec({ entrypoint: { module: "/a.ts", export: "" }, parentPid: 1 })).toMatchObject({ problems: [expect.stringMatching(/^entrypoint: /)] });
  });
});

describe("runnerArgv", () => {
  it("runs commands under the plain-JS supervisor and modules under this package's source loader", () => {
    expect(runnerArgv({ command: ["true"] }, "/s.json")).toEqual([process.execPath, COMMAND_SUPERVISOR_PATH, "/s.json"]);
    const argv = runnerArgv({ module: "/a.ts", export: "f" }, "/s.json");
    expect(argv[0]).toBe(process.execPath);
    expect(argv[1]).toBe("--import");
    expect(argv[2]).toMatch(/^file:\/\/.*\/iris\/src\/sourceLoader\/register\.mjs$/);
    expect(argv.slice(3)).toEqual([TASK_RUNNER_PATH, "/s.json"]);
  });
});

describe("moduleUrl", () => {
  it("keeps file: URLs, converts absolute paths, refuses relative ones", () => {
    expect(moduleUrl("file:///x/a.ts")).toBe("file:///x/a.ts");
    expect(moduleUrl("/x/a b.ts")).toBe("file:///x/a%20b.ts");
    expect(() => moduleUrl("./a.ts")).toThrow(/expected a file: URL or an absolute path/);
  });
});
