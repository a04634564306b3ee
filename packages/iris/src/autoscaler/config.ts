// The cluster config of `iris cluster up --config FILE`: YAML validated with zod. Every error names
// the field (`scaleGroups[0].maxWorkers: …`); the CLI prints it and exits 2.
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "../toolkit/zod.ts";
import { formatZodIssues, valueAtPath } from "../toolkit/zodIssues.ts";
import type { ScaleGroupConfig } from "./provider.ts";

/** A config file that cannot be used: `message` names the field. The CLI exits 2. */
export class ClusterConfigError extends Error {
  override readonly name = "ClusterConfigError";
}

/** The `controller:` section: the options of `iris controller`, camelCase; durations in ms. */
export interface ClusterControllerConfig {
  host: string;
  port: number;
  /** The database; undefined = a temporary directory (the state directory too). */
  db?: string | undefined;
  token?: string | undefined;
  authFile?: string | undefined;
  insecure: boolean;
  /** Auth off on a loopback controller (without it, one started with no token mints its own). */
  noAuth: boolean;
  httpPort?: number | undefined;
  /** The endpoint proxy's port (with httpPort; default any free port). */
  proxyPort?: number | undefined;
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
  workerTimeoutMs?: number | undefined;
  schedulingTimeoutMs?: number | undefined;
  bundleKeep?: number | undefined;
  /** "host:port" the workers dial; undefined = the bound address. */
  advertise?: string | undefined;
}

/** A whole cluster config, validated. */
export interface ClusterConfig {
  controller: ClusterControllerConfig;
  scaleGroups: ScaleGroupConfig[];
}

// Sizes and cores as the CLI reads them (cli/units.ts; the folder rules keep cli/ to the CLI):
// `8G`, `512M`, `1.5Gi` (binary suffixes), and cores `4`, `0.5` or millicores `250m`.
const SIZE = /^(\d+(?:\.\d+)?|\.\d+)\s*([kmgtp]?)(i?)(b?)$/i;
const POWERS: Record<string, number> = { "": 0, k: 1, m: 2, g: 3, t: 4, p: 5 };

function parseSize(text: string): number {
  const m = SIZE.exec(text.trim());
  if (!m) throw new Error(`expected a size such as 512M, 8G or 1073741824, got "${text}"`);
  const bytes = Math.floor(Number(m[1]) * 1024 ** POWERS[m[2].toLowerCase()]);
  if (!Number.isSafeInteger(bytes)) throw new Error(`size "${text}" is too large`);
  return bytes;
}

function parseCpu(text: string): number {
  const t = text.trim();
  const milli = /^(\d+)m$/.exec(t);
  if (milli) return Number(milli[1]);
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(t)) throw new Error(`expected cores such as 0.5 or 4, or millicores such as 250m, got "${text}"`);
  return Math.round(Number(t) * 1000);
}

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `15s`, `2m`, `1h` (also `500ms`) → milliseconds; a bare number is seconds. Throws on anything else. */
export function parseDuration(text: string | number): number {
  if (typeof text === "number") {
    if (!Number.isFinite(text) || text < 0) throw new Error(`expected a duration such as 15s, 2m or 1h, got ${text}`);
    return Math.round(text * 1000);
  }
  const m = DURATION.exec(text.trim());
  if (!m) throw new Error(`expected a duration such as 15s, 2m or 1h, got "${text}"`);
  return Math.round(Number(m[1]) * UNIT_MS[m[2]]);
}

const duration = z.union([z.string(), z.number()]).transform((v, ctx) => {
  try {
    return parseDuration(v);
  } catch (e) {
    ctx.addIssue({ code: "custom", message: (e as Error).message });
    return z.NEVER;
  }
});

const size = z.union([z.string(), z.number()]).transform((v, ctx) => {
  if (typeof v === "number") {
    if (Number.isSafeInteger(v) && v > 0) return v;
    ctx.addIssue({ code: "custom", message: `expected a size such as 512M, 2G or 1073741824, got ${v}` });
    return z.NEVER;
  }
  try {
    const n = parseSize(v);
    if (n <= 0) throw new Error(`expected a positive size, got "${v}"`);
    return n;
  } catch (e) {
    ctx.addIssue({ code: "custom", message: (e as Error).message });
    return z.NEVER;
  }
});

const cpu = z.union([z.string(), z.number()]).transform((v, ctx) => {
  try {
    const n = parseCpu(String(v));
    if (n <= 0) throw new Error(`expected a positive number of cores, got "${v}"`);
    return n;
  } catch (e) {
    ctx.addIssue({ code: "custom", message: (e as Error).message });
    return z.NEVER;
  }
});

const nonNegInt = z.number().int().min(0);
/** A TCP port; 0 = any free one. */
const port = z.number().int().min(0).max(65535);
/** An optional port: absent, null or a port. */
const optionalPort = port.nullish().transform((v) => v ?? undefined);
const optionalText = z
  .string()
  .nullish()
  .transform((v) => (v === null || v === "" ? undefined : v));
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

const controllerSchema = z
  .object({
    host: z.string().min(1).default("127.0.0.1"),
    port,
    db: optionalText,
    token: optionalText,
    authFile: optionalText,
    insecure: z.boolean().default(false),
    noAuth: z.boolean().default(false),
    httpPort: optionalPort,
    proxyPort: optionalPort,
    tlsCert: optionalText,
    tlsKey: optionalText,
    workerTimeout: duration.optional(),
    schedulingTimeout: duration.optional(),
    bundleKeep: nonNegInt.optional(),
    advertise: optionalText,
  })
  .strict()
  .superRefine((c, ctx) => {
    if ((c.tlsCert === undefined) !== (c.tlsKey === undefined)) ctx.addIssue({ code: "custom", path: ["tlsKey"], message: "tlsCert and tlsKey go together" });
    if (c.noAuth && (c.token !== undefined || c.authFile !== undefined))
      ctx.addIssue({ code: "custom", path: ["noAuth"], message: "noAuth turns auth off: give it without token or authFile" });
  });

const slurmSchema = z
  .object({
    partition: z.string().min(1),
    account: optionalText,
    qos: optionalText,
    timeLimit: optionalText,
    extraArgs: z
      .array(z.string())
      .nullish()
      .transform((v) => v ?? []),
    setup: z
      .array(z.string())
      .nullish()
      .transform((v) => v ?? []),
  })
  .strict();

const groupSchema = z
  .object({
    name: z.string().regex(NAME, "expected letters, digits, '_', '.', '-' (at most 63, starting with a letter or digit)"),
    provider: z.enum(["slurm", "local"]),
    minWorkers: nonNegInt.default(0),
    maxWorkers: z.number().int().min(1),
    idleTimeout: duration.default(300_000),
    bootTimeout: duration.default(300_000),
    priority: z.number().int().default(0),
    worker: z
      .object({
        cpu,
        memory: size,
        devices: z
          .record(z.string(), nonNegInt)
          .nullish()
          .transform((v) => v ?? {}),
        attributes: z
          .record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String))
          .nullish()
          .transform((v) => v ?? {}),
      })
      .strict(),
    slurm: slurmSchema.nullish().transform((v) => v ?? undefined),
  })
  .strict()
  .superRefine((g, ctx) => {
    if (g.minWorkers > g.maxWorkers) ctx.addIssue({ code: "custom", path: ["minWorkers"], message: `must be at most maxWorkers (${g.maxWorkers}), got ${g.minWorkers}` });
    if (g.provider === "slurm" && g.slurm === undefined) ctx.addIssue({ code: "custom", path: ["slurm", "partition"], message: "required for a slurm group" });
  });

const configSchema = z
  .object({
    controller: controllerSchema,
    scaleGroups: z.array(groupSchema).min(1),
  })
  .strict()
  .superRefine((c, ctx) => {
    const seen = new Set<string>();
    c.scaleGroups.forEach((g, i) => {
      if (seen.has(g.name)) ctx.addIssue({ code: "custom", path: ["scaleGroups", i, "name"], message: `duplicate group name "${g.name}"` });
      seen.add(g.name);
    });
  });

function fieldPath(p: readonly PropertyKey[]): string {
  let out = "";
  for (const k of p) out += typeof k === "number" ? `[${k}]` : out === "" ? String(k) : `.${String(k)}`;
  return out === "" ? "(top level)" : out;
}

/** Validates a parsed YAML document; throws {@link ClusterConfigError} naming the first bad field(s). */
export function validateClusterConfig(doc: unknown, source = "config"): ClusterConfig {
  const r = configSchema.safeParse(doc);
  if (!r.success) {
    const text = formatZodIssues(r.error, {
      limit: 5,
      path: fieldPath,
      root: "(top level)",
      line: (i, p) => {
        // zod reports "unrecognized keys" at the parent: name the key itself.
        if (i.code === "unrecognized_keys") return `${fieldPath([...p, i.keys[0]!])}: unknown field`;
        return i.code !== "custom" && valueAtPath(doc, p) === undefined ? `${fieldPath(p)}: required` : undefined;
      },
    });
    throw new ClusterConfigError(`${source}: ${text}`);
  }
  const c = r.data;
  return {
    controller: {
      host: c.controller.host,
      port: c.controller.port,
      db: c.controller.db,
      token: c.controller.token,
      authFile: c.controller.authFile,
      insecure: c.controller.insecure,
      noAuth: c.controller.noAuth,
      httpPort: c.controller.httpPort,
      proxyPort: c.controller.proxyPort,
      tlsCert: c.controller.tlsCert,
      tlsKey: c.controller.tlsKey,
      workerTimeoutMs: c.controller.workerTimeout,
      schedulingTimeoutMs: c.controller.schedulingTimeout,
      bundleKeep: c.controller.bundleKeep,
      advertise: c.controller.advertise,
    },
    scaleGroups: c.scaleGroups.map((g) => ({
      name: g.name,
      provider: g.provider,
      minWorkers: g.minWorkers,
      maxWorkers: g.maxWorkers,
      idleTimeoutMs: g.idleTimeout,
      bootTimeoutMs: g.bootTimeout,
      priority: g.priority,
      worker: { cpuMillis: g.worker.cpu, memoryBytes: g.worker.memory, devices: g.worker.devices, attributes: g.worker.attributes },
      slurm: g.slurm,
    })),
  };
}

/** Reads and validates a config file (paths in it are relative to the file's folder). */
export function loadClusterConfig(file: string): ClusterConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ClusterConfigError(`${file}: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ClusterConfigError(`${file}: not valid YAML: ${(e as Error).message}`);
  }
  const config = validateClusterConfig(doc, file);
  const dir = path.dirname(path.resolve(file));
  const abs = (p: string | undefined): string | undefined => (p === undefined ? undefined : path.resolve(dir, p.replace(/^~(?=\/|$)/, os.homedir())));
  const c = config.controller;
  return { ...config, controller: { ...c, db: abs(c.db), authFile: abs(c.authFile), tlsCert: abs(c.tlsCert), tlsKey: abs(c.tlsKey) } };
}
