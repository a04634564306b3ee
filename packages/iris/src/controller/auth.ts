// Who is calling: the controller's authenticator turns the `authorization` header of a gRPC call
// or an HTTP request into a Principal (or undefined: unauthenticated). Every face of the
// controller (gRPC services, the HTTP API, the endpoint proxy, the dashboard) asks it. Also here:
// the auth file (YAML, reloaded on change), per-attempt task tokens, and the table of which role
// may call which RPC.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import fs from "node:fs";
import type * as grpc from "@grpc/grpc-js";
import { parse as parseYaml } from "yaml";
import { z } from "../toolkit/zod.ts";
import { IrisError } from "../errors.ts";
import { inTree } from "../jobSpec.ts";
import { formatZodIssues } from "../toolkit/zodIssues.ts";

/** What a caller may do: see the iris README's security section. */
export type Role = "admin" | "user" | "worker" | "task";

/** An authenticated caller. */
export interface Principal {
  /** The user the caller acts for (job names are placed under it). */
  user: string;
  role: Role;
  /** Task tokens only: the full name of the attempt's job; the token acts within that job's tree. */
  job?: string;
  /** Task tokens only: the attempt id (`/user/job/<index>:<attempt>`) the token was minted for. */
  attempt?: string;
  /**
   * Worker sessions and minted registration credentials only (workerCredentials.ts): the worker id
   * the credential is bound to. A worker token without it (shared, from the auth file) may only
   * register.
   */
  worker?: string;
  /** A minted, single-use registration credential (not yet a session): it may only register `worker`. */
  registration?: boolean;
}

/**
 * Why worker principal `p` may not call worker RPC `method` at all, or undefined when it may: a
 * worker token (shared, or a registration credential) only registers, and is swapped there for a
 * session bound to the worker; everything else needs that session.
 */
export function workerSessionRefusal(p: Principal, method: string): string | undefined {
  if (p.role !== "worker" || method === "RegisterWorker") return undefined;
  if (p.worker === undefined || p.registration === true) {
    return `a worker token may only call RegisterWorker: ${method} needs the worker session RegisterWorker returns`;
  }
  return undefined;
}

/**
 * Refuses (PERMISSION_DENIED) a worker session acting for a worker other than its own. Admins
 * (and everyone on a cluster without auth) act for any worker.
 */
export function checkOwnWorker(p: Principal, workerId: string, what: string): void {
  if (p.role !== "worker") return;
  if (p.worker !== undefined && p.worker === workerId) return;
  throw new IrisError("PERMISSION_DENIED", `the session of worker ${p.worker ?? "?"} may not ${what} of worker ${JSON.stringify(workerId)}`);
}

export { inTree };

/**
 * Whether a caller may terminate or change job `jobName` (a full `/user/job…` name): admins any;
 * users jobs under `/<user>`; task tokens their own job's tree; workers none. Also the rule for
 * things owned by a job, e.g. endpoints (`endpoints.owner_job`, which is `/<user>` for a user's
 * own registrations).
 */
export function mayControlJob(p: Principal, jobName: string): boolean {
  switch (p.role) {
    case "admin":
      return true;
    case "user":
      return inTree(`/${p.user}`, jobName);
    case "task":
      return p.job !== undefined && inTree(p.job, jobName);
    default:
      return false;
  }
}

/**
 * Which roles may call each RPC (by method name, both services). A method missing here is
 * admin-only. Workers get the worker API and nothing else; tasks and users the client API.
 * New RPCs add a row: worker-API RPCs `WORKER`, client RPCs `CLIENT` (or narrower).
 */
export const RPC_ROLES: Readonly<Record<string, readonly Role[]>> = (() => {
  const CLIENT: readonly Role[] = ["admin", "user", "task"];
  const WORKER: readonly Role[] = ["admin", "worker"];
  return {
    // ControllerService: users launch, see all, change their own; tasks within their job tree
    // (handlers check ownership on top of this table).
    LaunchJob: CLIENT,
    GetJob: CLIENT,
    ListJobs: CLIENT,
    WatchJob: CLIENT,
    TerminateJob: CLIENT,
    ListTasks: CLIENT,
    StreamLogs: CLIENT,
    RegisterEndpoint: CLIENT,
    UnregisterEndpoint: CLIENT,
    ResolveEndpoint: CLIENT,
    ListEndpoints: CLIENT,
    ReportTaskStatus: CLIENT,
    GetTaskMetrics: CLIENT,
    ListWorkers: CLIENT,
    MintEndpointToken: CLIENT,
    GetBundle: CLIENT,
    UploadBundle: CLIENT,
    // DrainWorker, ClusterDown: admins only (not listed).
    // Tasks too: a task deciding where to run a gang asks whether the groups could start it.
    GetClusterStatus: CLIENT,
    // WorkerControlService.
    RegisterWorker: WORKER,
    Reconcile: WORKER,
    WatchAssignments: WORKER,
    PushLogs: WORKER,
    FetchBundle: WORKER,
    DeregisterWorker: WORKER,
    // HTTP-only reads.
    "GET /metrics": ["admin", "user"],
    "HTTP /proxy": CLIENT,
  };
})();

/** Whether `p` may call `method` at all (see {@link RPC_ROLES}; ownership is checked on top). */
export function mayCall(p: Principal, method: string): boolean {
  return (RPC_ROLES[method] ?? ["admin"]).includes(p.role);
}

/** Maps credentials to a Principal; `enabled` is false when the cluster has no auth at all. */
export interface Authenticator {
  readonly enabled: boolean;
  /** The caller behind an `authorization` header value (`Bearer <token>`), or undefined. */
  fromAuthorization(header: string | undefined): Principal | undefined;
}

/** The principal of every caller of a cluster without auth (a local cluster). */
export const LOCAL_ADMIN: Principal = { user: "admin", role: "admin" };

/** The hex SHA-256 of a token, as an auth file stores it. */
export function sha256Hex(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

const USER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const authFileSchema = z.strictObject({
  tokens: z.array(
    z
      .strictObject({
        user: z.string().regex(USER_NAME, "expected a user name (letters, digits, . _ -; at most 64)"),
        role: z.enum(["admin", "user", "worker"]),
        sha256: z
          .string()
          .regex(/^[0-9a-fA-F]{64}$/, "expected the hex SHA-256 of the token (64 hex digits)")
          .optional(),
        token: z.string().min(16, "expected a token of at least 16 characters").optional(),
      })
      .refine((t) => (t.sha256 === undefined) !== (t.token === undefined), "expected exactly one of sha256 and token"),
  ),
});

/** One identity of an auth file. */
export interface AuthIdentity {
  user: string;
  role: "admin" | "user" | "worker";
  /** Hex SHA-256 of the token (lower case). */
  sha256: string;
}

/**
 * Reads an auth file: YAML `tokens: [{ user, role, sha256 }]` (role admin | user | worker;
 * `token: <plain>` accepted instead of `sha256`). Bad files are an INVALID_ARGUMENT naming the file
 * and the entry.
 */
export function loadAuthFile(file: string): AuthIdentity[] {
  let raw: unknown;
  try {
    raw = parseYaml(fs.readFileSync(file, "utf8"));
  } catch (e) {
    throw new IrisError("INVALID_ARGUMENT", `auth file ${file}: ${(e as Error).message}`);
  }
  const r = authFileSchema.safeParse(raw);
  if (!r.success) throw new IrisError("INVALID_ARGUMENT", `auth file ${file}: ${formatZodIssues(r.error)}`);
  return r.data.tokens.map((t) => ({ user: t.user, role: t.role, sha256: (t.sha256 ?? sha256Hex(t.token!)).toLowerCase() }));
}

/** What the authenticator needs to check a task token: the attempt behind an attempt uid. */
export interface TaskAttemptLookup {
  /** The attempt's job name and attempt id, and whether it still runs; undefined if unknown. */
  (attemptUid: string): { jobName: string; attemptId: string; live: boolean } | undefined;
}

const TASK_TOKEN_PREFIX = "iris-task.";

/**
 * Per-attempt task tokens: `iris-task.<attempt uid>.<HMAC>` under a secret the controller keeps in
 * its database (so tokens survive a controller restart). A token is valid while its attempt
 * runs; it acts as role `task` within the attempt's job tree.
 */
export class TaskTokens {
  readonly #secret: Buffer;
  readonly #lookup: TaskAttemptLookup;

  constructor(secret: Buffer, lookup: TaskAttemptLookup) {
    this.#secret = secret;
    this.#lookup = lookup;
  }

  /** The token of one attempt. */
  mint(attemptUid: string): string {
    return `${TASK_TOKEN_PREFIX}${attemptUid}.${this.#mac(attemptUid)}`;
  }

  /** The principal of a task token, or undefined when forged, unknown or its attempt ended. */
  verify(token: string): Principal | undefined {
    if (!token.startsWith(TASK_TOKEN_PREFIX)) return undefined;
    const rest = token.slice(TASK_TOKEN_PREFIX.length);
    const dot = rest.lastIndexOf(".");
    if (dot <= 0) return undefined;
    const uid = rest.slice(0, dot);
    const mac = Buffer.from(rest.slice(dot + 1));
    const want = Buffer.from(this.#mac(uid));
    if (mac.length !== want.length || !timingSafeEqual(mac, want)) return undefined;
    const a = this.#lookup(uid);
    if (!a || !a.live) return undefined;
    return { user: a.jobName.split("/")[1] ?? "", role: "task", job: a.jobName, attempt: a.attemptId };
  }

  #mac(uid: string): string {
    return createHmac("sha256", this.#secret).update(uid, "utf8").digest("base64url");
  }
}

/** Options of {@link createAuthenticator}. */
export interface AuthOptions {
  /** The `--token` shorthand: one admin identity, user `admin`. */
  token?: string | undefined;
  /** An auth file (see {@link loadAuthFile}), reloaded when it changes. */
  authFile?: string | undefined;
  /** Checks task tokens (only consulted when auth is on). */
  taskTokens?: TaskTokens | undefined;
  /** Checks worker sessions and registration credentials (`iris-wsess.` / `iris-wreg.` tokens; workerCredentials.ts). */
  workerCredentials?: { verify(token: string): Principal | undefined } | undefined;
  /** Where reload failures are reported (default: stderr). */
  log?: (line: string) => void;
}

/** How often, at most, the auth file is checked for changes. */
const AUTH_FILE_CHECK_MS = 500;

/**
 * The cluster's authenticator: auth is on when a token or an auth file is given; then a caller is
 * the identity whose token it presents (SHA-256 compared), or a task token's attempt. Off: every
 * caller is {@link LOCAL_ADMIN}. The auth file is read at once (a bad file throws) and again when
 * its modification time or size changes; a bad edit keeps the previous identities, with a log line.
 */
export function createAuthenticator(opts: AuthOptions): Authenticator {
  const token = opts.token || undefined;
  const enabled = token !== undefined || (opts.authFile !== undefined && opts.authFile !== "");
  if (!enabled) return { enabled: false, fromAuthorization: () => LOCAL_ADMIN };
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const fixed = new Map<string, Principal>();
  if (token !== undefined) fixed.set(sha256Hex(token), { user: "admin", role: "admin" });
  let fromFile = new Map<string, Principal>();
  let stamp = "";
  let checkedAt = 0;
  const reload = (throwOnError: boolean): void => {
    const file = opts.authFile;
    if (!file) return;
    checkedAt = Date.now();
    let st: fs.Stats;
    try {
      st = fs.statSync(file);
    } catch (e) {
      if (throwOnError) throw new IrisError("INVALID_ARGUMENT", `auth file ${file}: ${(e as Error).message}`);
      return;
    }
    const next = `${st.mtimeMs}:${st.size}:${st.ino}`;
    if (next === stamp) return;
    try {
      const ids = loadAuthFile(file);
      fromFile = new Map(ids.map((i) => [i.sha256, { user: i.user, role: i.role }]));
      stamp = next;
    } catch (e) {
      if (throwOnError) throw e;
      log(`iris controller: keeping the previous identities: ${(e as Error).message}`);
      stamp = next;
    }
  };
  reload(true);
  return {
    enabled: true,
    fromAuthorization(header) {
      if (header === undefined || !header.startsWith("Bearer ")) return undefined;
      const presented = header.slice("Bearer ".length);
      if (presented === "" || presented.length > 4096) return undefined;
      if (presented.startsWith(TASK_TOKEN_PREFIX)) return opts.taskTokens?.verify(presented);
      if (presented.startsWith("iris-wsess.") || presented.startsWith("iris-wreg.")) return opts.workerCredentials?.verify(presented);
      if (Date.now() - checkedAt >= AUTH_FILE_CHECK_MS) reload(false);
      const h = sha256Hex(presented);
      return fixed.get(h) ?? fromFile.get(h);
    },
  };
}

/** One shared token (the `--token` shorthand): its holder is `admin`. No token: auth off. */
export function singleTokenAuthenticator(token: string | undefined): Authenticator {
  return createAuthenticator({ token });
}

/** The caller of a gRPC call, from its metadata. */
export function principalOfCall(auth: Authenticator, metadata: grpc.Metadata): Principal | undefined {
  const v = metadata.get("authorization")[0];
  return auth.fromAuthorization(typeof v === "string" ? v : undefined);
}

/**
 * The full name a caller's job name stands for: a bare `NAME` is `/<user>/NAME` of the caller's
 * user (the token's, not one the client claims); a name starting with `/` as given.
 */
export function placeJobName(p: Principal, name: string): string {
  return name.startsWith("/") ? name : `/${p.user}/${name}`;
}

/**
 * Refuses (PERMISSION_DENIED) a submission of `fullName` the caller may not make: users submit
 * under `/<user>` only, task tokens children of their own job only, admins anywhere.
 */
export function checkMaySubmit(p: Principal, fullName: string): void {
  if (p.role === "admin") return;
  if (p.role === "user" && inTree(`/${p.user}`, fullName)) return;
  if (p.role === "task" && p.job !== undefined && inTree(p.job, fullName) && fullName !== p.job) return;
  const where = p.role === "task" ? `children of its job ${p.job ?? "?"}` : `jobs under /${p.user}`;
  throw new IrisError("PERMISSION_DENIED", `${p.role} ${p.user} may not submit ${fullName}: it may submit ${where} only`);
}
