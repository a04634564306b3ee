// Field-by-field differences between two step identities (what `explain` prints).
import type { JsonValue } from "../step/canonical.ts";
import { canonicalJson } from "../step/canonical.ts";
import type { StepIdentity } from "../step/graph.ts";

/** One field whose value differs between two identities. */
export interface FieldChange {
  /** Dotted path (`optimizer.lr`, `files[2]`), `version`, or `config`. */
  path: string;
  /** `undefined` when the field was added. */
  old: string | undefined;
  /** `undefined` when the field was removed. */
  new: string | undefined;
}

function isDepRef(v: JsonValue): v is { $dep: string; $sub?: string } {
  return typeof v === "object" && v !== null && !Array.isArray(v) && typeof v.$dep === "string";
}

function show(v: JsonValue): string {
  if (isDepRef(v)) return `outputOf(${v.$dep}${typeof v.$sub === "string" ? `, ${JSON.stringify(v.$sub)}` : ""})`;
  return canonicalJson(v);
}

function flatten(v: JsonValue, at: string, out: Map<string, string>): void {
  if (v !== null && typeof v === "object" && !isDepRef(v)) {
    const entries = Array.isArray(v) ? v.map((e, i) => [`[${i}]`, e] as const) : Object.entries(v).map(([k, e]) => [at ? `.${k}` : k, e] as const);
    if (entries.length === 0) {
      out.set(at || "config", Array.isArray(v) ? "[]" : "{}");
      return;
    }
    for (const [k, e] of entries) flatten(e, `${at}${k}`, out);
    return;
  }
  out.set(at || "config", show(v));
}

/** The fields that differ between an old and a new identity, in path order. */
export function diffIdentity(oldId: StepIdentity, newId: StepIdentity): FieldChange[] {
  const a = new Map<string, string>();
  const b = new Map<string, string>();
  flatten(oldId.config as JsonValue, "", a);
  flatten(newId.config as JsonValue, "", b);
  const changes: FieldChange[] = [];
  for (const k of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    if (a.get(k) !== b.get(k)) changes.push({ path: k, old: a.get(k), new: b.get(k) });
  }
  if (oldId.version !== newId.version) {
    changes.push({ path: "version", old: JSON.stringify(oldId.version), new: JSON.stringify(newId.version) });
  }
  return changes;
}

/** `a.b: 1 → 2` lines for people. */
export function formatChanges(changes: FieldChange[]): string[] {
  return changes.map((c) => `${c.path}: ${c.old ?? "(absent)"} → ${c.new ?? "(absent)"}`);
}
