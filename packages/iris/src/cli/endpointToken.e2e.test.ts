// `iris controller --http-port` and `iris endpoint token` as real processes: the printed
// capability URL reaches the registered service through the controller's proxy.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { waitFor } from "../testing.ts";
import { SOURCE_LOADER } from "../process/sourceLoader.ts";

const MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), "main.ts");
const TOKEN = "endpoint-token-e2e";

function iris(args: string[], env: NodeJS.ProcessEnv): { out: () => string; err: () => string; exited: Promise<number | null>; kill: (s: NodeJS.Signals) => void } {
  const child = spawn(process.execPath, ["--import", SOURCE_LOADER, MAIN, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
  return { out: () => out, err: () => err, exited: new Promise((r) => child.on("close", (c) => r(c))), kill: (s) => child.kill(s) };
}

describe("iris endpoint token", () => {
  let dir: string;
  let upstream: http.Server;
  const env: NodeJS.ProcessEnv = { ...process.env, IRIS_USER: "clitest" };
  delete env.IRIS_CONTROLLER_ADDRESS;
  delete env.IRIS_AUTH_TOKEN;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-endpoint-token-"));
    upstream = http.createServer((req, res) => res.writeHead(200, { "content-type": "text/plain" }).end(`hello from ${req.url} auth=${req.headers.authorization ?? "none"}`));
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  });
  afterAll(async () => {
    await new Promise<void>((r) => upstream.close(() => r()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("prints a capability URL that reaches the service through the controller's HTTP port", async () => {
    const controller = iris(["controller", "--port", "0", "--http-port", "0", "--db", path.join(dir, "c.sqlite"), "--token", TOKEN], env);
    try {
      const [, grpcAddr, httpAddr] = await waitFor(
        `the controller's addresses (stdout: ${controller.out()} stderr: ${controller.err()})`,
        () => /listening on (\S+)[\s\S]*HTTP.* on http:\/\/(\S+)/.exec(controller.out()) ?? undefined,
        { timeoutMs: 30_000 },
      );
      const client = IrisClient.connect(grpcAddr!, { token: TOKEN });
      await client.registerEndpoint("/clitest/app/web", `127.0.0.1:${(upstream.address() as AddressInfo).port}`);
      client.close();
      const token = iris(["endpoint", "token", "/clitest/app/web", "--controller", grpcAddr!, "--token", TOKEN, "--ttl", "120"], env);
      expect(await token.exited, token.err()).toBe(0);
      const url = token.out().split("\n")[0]!;
      expect(url).toMatch(new RegExp(`^http://${httpAddr!.replace(/\./g, "\\.")}/cap/[\\w-]+\\.[\\w-]+$`));
      expect(token.out()).toMatch(/endpoint \/clitest\/app\/web, expires 20\d\d-/);
      const res = await fetch(`${url}/v1/models?x=1`, { headers: { authorization: "Bearer not-for-the-service" } });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("hello from /v1/models?x=1 auth=none");
      // Without the cluster token the CLI is refused.
      const anon = iris(["endpoint", "token", "/clitest/app/web", "--controller", grpcAddr!], env);
      expect(await anon.exited).not.toBe(0);
      expect(anon.err()).toMatch(/UNAUTHENTICATED/);
    } finally {
      controller.kill("SIGTERM");
      expect(await controller.exited).toBe(0);
    }
  }, 60_000);
});
