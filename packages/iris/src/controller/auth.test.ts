// Unit tests of the controller's auth rules: auth files, task tokens, the role table, placement
// of bare job names, and the strict JSON type check of the HTTP face.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { jsonDepth } from "../jobSpec.ts";
import { loadIrisProto } from "../internal/rpc.ts";
import { checkMaySubmit, createAuthenticator, loadAuthFile, mayCall, mayControlJob, placeJobName, sha256Hex, TaskTokens } from "./auth.ts";
import { checkJsonMessage } from "../http/jsonProto.ts";

describe("auth", () => {
  it("reads auth files (sha256 or plain token) and names what is wrong in a bad one", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-auth-"));
    try {
      const file = path.join(dir, "a.yaml");
      fs.writeFileSync(file, `tokens:\n  - { user: a, role: user, sha256: ${sha256Hex("t".repeat(20)).toUpperCase()} }\n  - { user: w, role: worker, token: ${"w".repeat(20)} }\n`);
      expect(loadAuthFile(file)).toEqual([
        { user: "a", role: "user", sha256: sha256Hex("t".repeat(20)) },
        { user: "w", role: "worker", sha256: sha256Hex("w".repeat(20)) },
      ]);
      const auth = createAuthenticator({ authFile: file });
      expect(auth.fromAuthorization(`Bearer ${"t".repeat(20)}`)).toEqual({ user: "a", role: "user" });
      expect(auth.fromAuthorization(`Bearer ${"x".repeat(20)}`)).toBeUndefined();
      expect(auth.fromAuthorization(undefined)).toBeUndefined();
      fs.writeFileSync(file, "tokens:\n  - { user: a, role: root, sha256: abc }\n");
      expect(() => loadAuthFile(file)).toThrow(/tokens\.0\.role.*tokens\.0\.sha256|tokens\.0\.role/);
      expect(() => createAuthenticator({ authFile: path.join(dir, "missing.yaml") })).toThrow(/auth file .*missing\.yaml/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the --token shorthand is one admin; no token and no file is auth off", () => {
    expect(createAuthenticator({ token: "s3cret" }).fromAuthorization("Bearer s3cret")).toEqual({ user: "admin", role: "admin" });
    expect(createAuthenticator({ token: "s3cret" }).fromAuthorization("Bearer s3cre")).toBeUndefined();
    expect(createAuthenticator({}).enabled).toBe(false);
  });

  it("task tokens carry their attempt, are refused forged or after the attempt ends", () => {
    let live = true;
    const tokens = new TaskTokens(Buffer.alloc(32, 1), (uid) => (uid === "u-1" ? { jobName: "/al/job", attemptId: "/al/job/0:1", live } : undefined));
    const t = tokens.mint("u-1");
    expect(tokens.verify(t)).toEqual({ user: "al", role: "task", job: "/al/job", attempt: "/al/job/0:1" });
    expect(new TaskTokens(Buffer.alloc(32, 2), () => ({ jobName: "/al/job", attemptId: "x", live: true })).verify(t)).toBeUndefined();
    expect(tokens.verify(tokens.mint("u-2"))).toBeUndefined();
    live = false;
    expect(tokens.verify(t)).toBeUndefined();
  });

  it("roles: workers only the worker API; ownership by tree", () => {
    const user = { user: "u1", role: "user" as const };
    const task = { user: "u1", role: "task" as const, job: "/u1/a" };
    const worker = { user: "w", role: "worker" as const };
    expect([mayCall(worker, "Reconcile"), mayCall(worker, "LaunchJob"), mayCall(user, "Reconcile"), mayCall(task, "LaunchJob"), mayCall(user, "SomethingNew")]).toEqual([
      true,
      false,
      false,
      true,
      false,
    ]);
    expect([mayControlJob(user, "/u1/x"), mayControlJob(user, "/u10/x"), mayControlJob(task, "/u1/a/b"), mayControlJob(task, "/u1/b")]).toEqual([true, false, true, false]);
    expect(placeJobName(user, "x")).toBe("/u1/x");
    expect(placeJobName(user, "/u2/x")).toBe("/u2/x");
    expect(() => checkMaySubmit(user, "/u2/x")).toThrow(/PERMISSION_DENIED|may not submit/);
    expect(() => checkMaySubmit(task, "/u1/a")).toThrow(/children of its job/);
    expect(() => checkMaySubmit(task, "/u1/a/c")).not.toThrow();
  });

  it("checks JSON bodies against the request's protobuf types, without coercion", () => {
    const type = (loadIrisProto().ControllerService.service.LaunchJob as unknown as { requestType: { type: Parameters<typeof checkJsonMessage>[1] } }).requestType.type;
    expect(checkJsonMessage({ spec: { name: "/a/b", replicas: 2, gang: true, env: { A: "1" }, timeoutMs: "5" } }, type, "body")).toBeUndefined();
    expect(checkJsonMessage({ spec: { replicas: "abc" } }, type, "body")).toMatch(/body\.spec\.replicas: expected a 32-bit integer/);
    expect(checkJsonMessage({ spec: { gang: "yes" } }, type, "body")).toMatch(/body\.spec\.gang: expected true or false/);
    expect(checkJsonMessage({ spec: { env: { A: 1 } } }, type, "body")).toMatch(/body\.spec\.env\.A: expected a string/);
    expect(checkJsonMessage({ spec: { ports: ["a", 3] } }, type, "body")).toMatch(/body\.spec\.ports\[1\]/);
    expect(checkJsonMessage({ extra: 1 }, type, "body")).toMatch(/body\.extra: unknown field/);
    expect(checkJsonMessage([], type, "body")).toMatch(/expected an object/);
  });

  it("measures JSON nesting without parsing (strings do not count)", () => {
    expect(jsonDepth("1")).toBe(0);
    expect(jsonDepth('[{"a":[1]}]')).toBe(3);
    expect(jsonDepth('["[[[[", {"x": "]]]"}]')).toBe(2);
    expect(jsonDepth("[".repeat(100_000))).toBe(100_000);
  });
});
