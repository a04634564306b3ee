// Safe by default, as real `iris` processes: where `iris controller` listens (the socket itself,
// from /proc/net/tcp), refusing a non-loopback bind with auth off, --insecure's warnings, and TLS
// with a CA made at test time with openssl (a client with the wrong CA is refused, readably).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Controller } from "../controller/controller.ts";
import { IrisClient } from "../client/irisClient.ts";
import type { IrisError } from "../errors.ts";
import { waitFor } from "../testing.ts";
import { Worker } from "../worker/worker.ts";
import { SOURCE_LOADER } from "../process/sourceLoader.ts";

const MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), "main.ts");

/** A running `iris …` process and its output so far. */
class Iris {
  readonly child: ChildProcess;
  stdout = "";
  stderr = "";
  readonly exited: Promise<number | null>;
  constructor(args: string[], env: NodeJS.ProcessEnv = {}) {
    const base = { ...process.env, ...env };
    delete base.IRIS_AUTH_TOKEN;
    delete base.IRIS_TLS_CA;
    delete base.IRIS_CONTROLLER_ADDRESS;
    this.child = spawn(process.execPath, ["--import", SOURCE_LOADER, MAIN, ...args], { env: { ...base, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.setEncoding("utf8").on("data", (d: string) => (this.stdout += d));
    this.child.stderr!.setEncoding("utf8").on("data", (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.on("close", (code) => resolve(code)));
  }
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    return this.exited;
  }
}

/** The local addresses of the TCP sockets listening on `port` (IPv4 and IPv6), from /proc/net. */
function listeningAddresses(port: number): string[] {
  const out: string[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 4 || f[3] !== "0A") continue; // 0A = LISTEN
      const [hexAddr, hexPort] = f[1]!.split(":");
      if (parseInt(hexPort!, 16) !== port) continue;
      if (hexAddr!.length === 8) {
        const b = Buffer.from(hexAddr!, "hex");
        out.push(`${b[3]}.${b[2]}.${b[1]}.${b[0]}`);
      } else out.push(hexAddr!.toLowerCase());
    }
  }
  return out;
}

let dir: string;
const openssl = (...args: string[]): void => void execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-tls-"));
  // A CA, a server certificate for 127.0.0.1/localhost signed by it, and an unrelated CA.
  for (const ca of ["ca", "other-ca"]) {
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", `${ca}.key`, "-out", `${ca}.pem`, "-days", "2", "-subj", `/CN=iris test ${ca}`);
  }
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1");
  fs.writeFileSync(path.join(dir, "san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext");
  // Signed by the trusted CA, but for another address only.
  fs.writeFileSync(path.join(dir, "elsewhere.ext"), "subjectAltName=IP:10.9.9.9,DNS:elsewhere.example\n");
  openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "elsewhere.pem", "-days", "2", "-extfile", "elsewhere.ext");
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("iris controller: bind", () => {
  it("listens on 127.0.0.1 only when no --host is given", async () => {
    const c = new Iris(["controller", "--port", "0", "--db", path.join(dir, "bind.sqlite")]);
    try {
      const m = await waitFor("the listening line", () => /listening on (127\.0\.0\.1):(\d+)/.exec(c.stdout) ?? (c.child.exitCode !== null ? new Error(c.stderr) : undefined), {
        timeoutMs: 30_000,
      });
      if (m instanceof Error) throw m;
      const port = Number(m[2]);
      expect(listeningAddresses(port)).toEqual(["127.0.0.1"]);
    } finally {
      expect(await c.stop()).toBe(0);
    }
  });

  it("refuses a non-loopback address with auth off: exit 2 and a message saying why", async () => {
    const c = new Iris(["controller", "--port", "0", "--host", "0.0.0.0", "--db", path.join(dir, "open.sqlite")]);
    expect(await c.exited).toBe(2);
    expect(c.stderr).toMatch(/refusing to listen on 0\.0\.0\.0 with auth off/);
    expect(c.stderr).toMatch(/--token or --auth-file/);
    expect(fs.existsSync(path.join(dir, "open.sqlite"))).toBe(false);
  });

  it("--insecure starts anyway, warning at start and on every worker registration", async () => {
    const c = new Iris(["controller", "--port", "0", "--host", "0.0.0.0", "--insecure", "--db", path.join(dir, "insecure.sqlite")]);
    try {
      const m = await waitFor("the listening line", () => /listening on 0\.0\.0\.0:(\d+)/.exec(c.stdout) ?? undefined, { timeoutMs: 30_000 });
      expect(c.stderr).toMatch(/WARNING: auth is off \(--insecure\) on 0\.0\.0\.0/);
      expect(listeningAddresses(Number(m[1]))).toEqual(["0.0.0.0"]);
      const w = await Worker.start({ controller: `127.0.0.1:${m[1]}`, cpuMillis: 1000, memoryBytes: 2 ** 30 });
      try {
        await w.registered;
        await waitFor("the registration warning", () => /WARNING: worker \S+ at \S+ registered on a controller with auth off/.test(c.stderr));
      } finally {
        await w.stop();
      }
    } finally {
      expect(await c.stop()).toBe(0);
    }
  });
});

describe("iris controller: TLS", () => {
  it("serves gRPC over TLS to clients with the CA; the wrong CA or none is refused with a readable error", async () => {
    const c = new Iris([
      "controller",
      "--port",
      "0",
      "--db",
      path.join(dir, "tls.sqlite"),
      "--token",
      "tls-admin-token",
      "--tls-cert",
      path.join(dir, "server.pem"),
      "--tls-key",
      path.join(dir, "server.key"),
    ]);
    try {
      const m = await waitFor("the listening line", () => /listening on (\S+) .*tls on/.exec(c.stdout) ?? (c.child.exitCode !== null ? new Error(c.stderr) : undefined), {
        timeoutMs: 30_000,
      });
      if (m instanceof Error) throw m;
      const address = m[1]!;
      const run = async (args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string; err: string }> => {
        const p = new Iris(["job", "list", "--controller", address, "--token", "tls-admin-token", ...args], env);
        const code = await p.exited;
        return { code, out: p.stdout, err: p.stderr };
      };
      const ok = await run(["--tls-ca", path.join(dir, "ca.pem")]);
      expect(ok.code, ok.err).toBe(0);
      // Dialled by IP, without Node's RFC 6066 warning about an IP as the TLS server name.
      expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(ok.err).not.toMatch(/DEP0123|ServerName/);
      const viaEnv = await run([], { IRIS_TLS_CA: path.join(dir, "ca.pem") });
      expect(viaEnv.code, viaEnv.err).toBe(0);
      const wrong = await run(["--tls-ca", path.join(dir, "other-ca.pem")]);
      expect(wrong.code).toBe(1);
      expect(wrong.err).toMatch(/UNAVAILABLE: .*certificate/i);
      expect(wrong.err).toMatch(/--tls-ca or IRIS_TLS_CA/);
      const plain = await run([]);
      expect(plain.code).toBe(1);
    } finally {
      expect(await c.stop()).toBe(0);
    }
  });

  it("a certificate from the trusted CA but for another address is refused, by IP and by name", async () => {
    const controller = await Controller.start({
      port: 0,
      dbPath: path.join(dir, "elsewhere.sqlite"),
      token: "tls-admin-token",
      tls: { cert: fs.readFileSync(path.join(dir, "elsewhere.pem")), key: fs.readFileSync(path.join(dir, "server.key")) },
    });
    try {
      const port = controller.address.split(":").pop()!;
      for (const address of [`127.0.0.1:${port}`, `localhost:${port}`]) {
        const client = IrisClient.connect(address, { token: "tls-admin-token", tlsCa: path.join(dir, "ca.pem"), user: "tls" });
        try {
          const err = await client.list().then(
            () => undefined,
            (e: unknown) => e as IrisError,
          );
          expect(err?.code).toBe("UNAVAILABLE");
          expect(err?.message).toMatch(/does not match certificate's altnames/);
          expect(err?.message).toMatch(/not issued for the address dialled/);
        } finally {
          client.close();
        }
      }
    } finally {
      await controller.stop();
    }
  });

  it("workers and tasks reach a TLS controller with the CA; the HTTP face is HTTPS", async () => {
    const ca = path.join(dir, "ca.pem");
    const controller = await Controller.start({
      port: 0,
      httpPort: 0,
      dbPath: path.join(dir, "tls2.sqlite"),
      token: "tls-admin-token",
      tls: { cert: fs.readFileSync(path.join(dir, "server.pem")), key: fs.readFileSync(path.join(dir, "server.key")) },
    });
    const worker = await Worker.start({ controller: controller.address, token: "tls-admin-token", tlsCa: ca, cpuMillis: 1000, memoryBytes: 2 ** 30 });
    const client = IrisClient.connect(controller.address, { token: "tls-admin-token", tlsCa: ca, user: "tls" });
    try {
      await worker.registered;
      // The task sees the CA (IRIS_TLS_CA) and its own token, and can use them.
      const job = await client.submit({ name: "env", entrypoint: { command: ["sh", "-c", 'test "$IRIS_TLS_CA" = "$0" && echo ca-ok', ca] }, resources: { cpuMillis: 100 } });
      expect((await job.wait({ timeoutMs: 30_000 })).state).toBe("SUCCEEDED");
      const lines: string[] = [];
      for await (const e of job.logs()) lines.push(e.line);
      expect(lines).toContain("ca-ok");
      const status = await new Promise<number>((resolve, reject) => {
        const req = https.request(
          `https://${controller.httpAddress}/api/ListWorkers`,
          { method: "POST", ca: fs.readFileSync(ca), headers: { authorization: "Bearer tls-admin-token" } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        req.end("{}");
      });
      expect(status).toBe(200);
    } finally {
      client.close();
      await worker.stop();
      await controller.stop();
    }
  });
});
