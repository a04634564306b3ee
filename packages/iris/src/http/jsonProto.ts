// The strict JSON → protobuf checker of the HTTP API: a body's JSON must have exactly the request
// message's shape and types (no unknown fields, no coercion), checked before protobuf sees it.
import { loadIrisProto } from "../internal/rpc.ts";

interface FieldDescriptor {
  name: string;
  label: string;
  type: string;
  typeName: string;
}
export interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType: (MessageDescriptor & { options: { mapEntry?: boolean } | null })[];
}

const INT32_TYPES = new Set(["TYPE_INT32", "TYPE_SINT32", "TYPE_SFIXED32"]);
const UINT32_TYPES = new Set(["TYPE_UINT32", "TYPE_FIXED32"]);
const INT64_TYPES = new Set(["TYPE_INT64", "TYPE_SINT64", "TYPE_SFIXED64", "TYPE_UINT64", "TYPE_FIXED64"]);

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return `"${v.length > 40 ? `${v.slice(0, 40)}…` : v}"`;
  return typeof v === "object" ? "an object" : `${typeof v} ${String(v)}`;
}

function messageType(name: string, parent: MessageDescriptor | undefined): MessageDescriptor {
  const nested = parent?.nestedType.find((n) => n.name === name);
  if (nested) return nested;
  const t = (loadIrisProto() as unknown as Record<string, { type?: MessageDescriptor } | undefined>)[name]?.type;
  if (!t) throw new Error(`unknown message type ${name}`);
  return t;
}

function checkScalar(t: string, v: unknown, path: string): string | undefined {
  const want = (what: string): string => `${path}: expected ${what}, got ${describe(v)}`;
  if (t === "TYPE_STRING") return typeof v === "string" ? undefined : want("a string");
  if (t === "TYPE_BOOL") return typeof v === "boolean" ? undefined : want("true or false");
  if (t === "TYPE_DOUBLE" || t === "TYPE_FLOAT") return typeof v === "number" && Number.isFinite(v) ? undefined : want("a finite number");
  if (INT32_TYPES.has(t)) return typeof v === "number" && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31 ? undefined : want("a 32-bit integer");
  if (UINT32_TYPES.has(t)) return typeof v === "number" && Number.isInteger(v) && v >= 0 && v < 2 ** 32 ? undefined : want("a non-negative 32-bit integer");
  if (INT64_TYPES.has(t)) {
    if (typeof v === "number" && Number.isSafeInteger(v)) return undefined;
    if (typeof v === "string" && /^-?\d{1,19}$/.test(v) && Number.isSafeInteger(Number(v))) return undefined;
    return want("an integer");
  }
  if (t === "TYPE_BYTES") return typeof v === "string" ? undefined : want("base64 text");
  return want(`a value of ${t}`);
}

/**
 * Checks that a JSON value has exactly the shape of protobuf message `type`: no unknown fields,
 * every value of its field's type (no coercion: `"abc"` or `true` is not an int32). Returns
 * the first problem, naming its path, or undefined.
 */
export function checkJsonMessage(v: unknown, type: MessageDescriptor, path: string): string | undefined {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return `${path}: expected an object, got ${describe(v)}`;
  for (const [key, value] of Object.entries(v)) {
    const f = type.field.find((x) => x.name === key);
    if (!f) return `${path}.${key}: unknown field of ${type.name}`;
    if (value === null) continue;
    const at = `${path}.${key}`;
    const sub = f.type === "TYPE_MESSAGE" ? messageType(f.typeName, type) : undefined;
    if (f.label === "LABEL_REPEATED" && sub && (sub as { options?: { mapEntry?: boolean } | null }).options?.mapEntry) {
      if (typeof value !== "object" || Array.isArray(value)) return `${at}: expected an object (a map), got ${describe(value)}`;
      const vf = sub.field.find((x) => x.name === "value")!;
      for (const [k, x] of Object.entries(value as Record<string, unknown>)) {
        const err = vf.type === "TYPE_MESSAGE" ? checkJsonMessage(x, messageType(vf.typeName, sub), `${at}.${k}`) : checkScalar(vf.type, x, `${at}.${k}`);
        if (err) return err;
      }
      continue;
    }
    const items = f.label === "LABEL_REPEATED" ? value : [value];
    if (!Array.isArray(items)) return `${at}: expected an array, got ${describe(value)}`;
    for (const [i, x] of items.entries()) {
      const p = f.label === "LABEL_REPEATED" ? `${at}[${i}]` : at;
      const err = sub ? checkJsonMessage(x, sub, p) : checkScalar(f.type, x, p);
      if (err) return err;
    }
  }
  return undefined;
}
