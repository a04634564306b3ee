// The per-user credentials file: a controller started without credentials on loopback mints a
// random admin token and records it here, keyed by its address, so that everything the same OS
// user runs (the CLI, `iris worker`, marin, IrisClient) finds it without flags. The file is
// `$IRIS_CREDENTIALS_FILE`, else `$XDG_CONFIG_HOME/iris/credentials.json`, else
// `~/.config/iris/credentials.json`; mode 0600 in a 0700 directory, written atomically under a
// lock file (several controllers may start at once). `127.0.0.1`, `localhost` and `::1` are one
// address. A file owned by another user, or readable by others, is ignored.
import { createHmac } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "./toolkit/zod.ts";
import { writeFileAtomicSync } from "./toolkit/atomicWrite.ts";

/** One controller's entry. */
export interface ControllerCredentials {
  /** The admin bearer token the controller minted. */
  token: string;
  /** `host:port` of its HTTP face (the dashboard), when it serves one. */
  http?: string | undefined;
  /** The endpoint proxy's origin, when it serves one. */
  proxy?: string | undefined;
  /** The controller's process id and start time (ms), for humans. */
  pid?: number | undefined;
  createdAtMs?: number | undefined;
}

const entrySchema = z.object({
  token: z.string().min(16).max(4096),
  http: z.string().max(300).optional(),
  proxy: z.string().max(300).optional(),
  pid: z.number().optional(),
  createdAtMs: z.number().optional(),
});
const fileSchema = z.object({ controllers: z.record(z.string(), entrySchema) });

/** Where the credentials file is. */
export function credentialsFilePath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.IRIS_CREDENTIALS_FILE) return path.resolve(env.IRIS_CREDENTIALS_FILE);
  const base = env.XDG_CONFIG_HOME ? path.resolve(env.XDG_CONFIG_HOME) : path.join(os.homedir(), ".config");
  return path.join(base, "iris", "credentials.json");
}

/** Whether `host` is a loopback name or address. */
export function isLoopbackName(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * The key of an address (`host:port`, `[v6]:port`, or an `http(s)://` URL): lower case, and
 * `localhost`, `127.0.0.1` and `::1` all as `127.0.0.1`.
 */
export function canonicalAddress(address: string): string {
  let a = address
    .trim()
    .replace(/^[a-z]+:\/\//i, "")
    .replace(/\/.*$/, "")
    .toLowerCase();
  let host: string;
  let port: string;
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(a);
  if (v6) {
    host = v6[1]!;
    port = v6[2] ?? "";
  } else if ((a.match(/:/g) ?? []).length > 1) {
    // A bare IPv6 address with a port after the last colon (`::1:7070`).
    const i = a.lastIndexOf(":");
    host = a.slice(0, i);
    port = a.slice(i + 1);
  } else {
    const i = a.lastIndexOf(":");
    host = i < 0 ? a : a.slice(0, i);
    port = i < 0 ? "" : a.slice(i + 1);
  }
  if (host === "localhost" || host === "::1" || host === "127.0.0.1") host = "127.0.0.1";
  a = host.includes(":") ? `[${host}]` : host;
  return port ? `${a}:${port}` : a;
}

function readAll(file: string): Record<string, ControllerCredentials> {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return {};
  }
  // Another user's file, or one others may read, is not ours to trust.
  if (typeof process.getuid === "function" && st.uid !== process.getuid()) return {};
  if ((st.mode & 0o077) !== 0) return {};
  try {
    const r = fileSchema.safeParse(JSON.parse(fs.readFileSync(file, "utf8")));
    return r.success ? r.data.controllers : {};
  } catch {
    return {};
  }
}

/** The recorded credentials of the controller at `address` (its gRPC or HTTP address), if any. */
export function lookupCredentials(address: string, file = credentialsFilePath()): ControllerCredentials | undefined {
  const all = readAll(file);
  const key = canonicalAddress(address);
  if (all[key]) return all[key];
  return Object.values(all).find((e) => (e.http !== undefined && canonicalAddress(e.http) === key) || (e.proxy !== undefined && canonicalAddress(e.proxy) === key));
}

/** The minted token of the controller at `address` from the credentials file, if any. */
export function lookupToken(address: string, file = credentialsFilePath()): string | undefined {
  return lookupCredentials(address, file)?.token;
}

/**
 * The token a client of `address` uses: `explicit` when given (`""`: none), else
 * `IRIS_AUTH_TOKEN`, else the credentials file's entry for the address.
 */
export function resolveToken(address: string, explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (explicit !== undefined) return explicit === "" ? undefined : explicit;
  if (env.IRIS_AUTH_TOKEN) return env.IRIS_AUTH_TOKEN;
  return lookupToken(address, credentialsFilePath(env));
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

// Runs `fn` holding `<file>.lock` (O_EXCL); a lock older than 10 s is a dead writer's and is taken over.
function withLock<T>(file: string, fn: () => T): T {
  const lock = `${file}.lock`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      fs.closeSync(fs.openSync(lock, "wx", 0o600));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      try {
        if (Date.now() - fs.statSync(lock).mtimeMs > 10_000) fs.rmSync(lock, { force: true });
      } catch {
        // gone already
      }
      if (Date.now() > deadline) throw new Error(`credentials file ${file}: could not take its lock ${lock}`, { cause: e });
      sleepSync(5 + Math.random() * 20);
    }
  }
  try {
    return fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

function update(file: string, change: (all: Record<string, ControllerCredentials>) => void): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  withLock(file, () => {
    const all = readAll(file);
    change(all);
    writeFileAtomicSync(file, `${JSON.stringify({ controllers: all }, null, 2)}\n`, { durable: false, mode: 0o600 });
  });
}

/** Records a minted token for the controller at `address` (mode 0600). */
export function saveCredentials(address: string, entry: ControllerCredentials, file = credentialsFilePath()): void {
  update(file, (all) => {
    all[canonicalAddress(address)] = entry;
  });
}

/** Removes the entry of `address` when it still holds `token` (a controller that stops). */
export function removeCredentials(address: string, token: string, file = credentialsFilePath()): void {
  try {
    update(file, (all) => {
      const key = canonicalAddress(address);
      if (all[key]?.token === token) delete all[key];
    });
  } catch {
    // Best effort: a stale entry is replaced by the next controller on that address.
  }
}

/**
 * The admin token a controller mints: derived from its database's random secret (32 bytes drawn
 * when the database is created), so a new database gets a new random token and a controller
 * restarted on the same database keeps it (its workers and clients stay signed in).
 */
export function mintAdminToken(secret: Buffer): string {
  return `iris-admin.${createHmac("sha256", secret).update("iris admin token v1").digest("base64url")}`;
}
