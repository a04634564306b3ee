// The dashboard's shared pieces: the `html` template tag (htm on Preact), calls to the controller's
// public HTTP API (`POST /api/<Method>`), the live streams (server-sent events) and formatting.
import { h } from "preact";
import { useEffect, useState } from "preact/hooks";
import htm from "htm";

/** Tagged templates that build Preact elements (no JSX build step). */
export const html = htm.bind(h);

/** An API failure: `code` is the gRPC status name the controller answered. */
export class ApiError extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

let sessionInfo;
/**
 * Who is signed in, the session's CSRF token (sent with every POST: the cookie alone proves
 * nothing) and the endpoint proxy's origin, from `GET /api/session` (read once).
 * @returns {Promise<{ user?: string, role?: string, csrf?: string, proxyOrigin?: string }>}
 */
export function session() {
  sessionInfo ??= fetch("/api/session", { credentials: "same-origin" })
    .then((r) => (r.ok ? r.json() : {}))
    .catch(() => ({}));
  return sessionInfo;
}

const capabilities = new Map();
/**
 * A base URL for a registered service on the endpoint proxy's own origin (never this page's): a
 * capability URL minted for the signed-in user (MintEndpointToken: owners and admins), reused
 * until a minute before it expires.
 * @param {string} name @returns {Promise<string>}
 */
export async function endpointUrl(name) {
  const had = capabilities.get(name);
  if (had && had.expiresAtMs - 60_000 > Date.now()) return had.url;
  const cap = await api("MintEndpointToken", { name, ttlSeconds: 3600 });
  capabilities.set(name, { url: cap.url, expiresAtMs: Number(cap.expiresAtMs) });
  return cap.url;
}

/**
 * Calls `POST /api/<method>` with `body` as JSON (the session cookie rides along); resolves with
 * the response JSON. A 401 (the session ended) reloads the page, which then shows the login form.
 * @param {string} method @param {object} [body]
 */
export async function api(method, body = {}) {
  const { csrf } = await session();
  const headers = { "content-type": "application/json", ...(csrf ? { "x-iris-csrf": csrf } : {}) };
  const res = await fetch(`/api/${method}`, { method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin" });
  const data = await res.json().catch(() => ({}));
  if (res.status === 401) {
    location.reload();
    throw new ApiError("UNAUTHENTICATED", "signed out");
  }
  if (!res.ok) throw new ApiError(data.code ?? String(res.status), data.message ?? res.statusText);
  return data;
}

/**
 * Subscribes to a server-sent-events stream; `handlers` maps event names to callbacks (JSON data).
 * Returns the close function. The browser reconnects a dropped stream by itself.
 * @param {string} path @param {Record<string, (data: any) => void>} handlers
 */
export function subscribe(path, handlers) {
  const es = new EventSource(path, { withCredentials: true });
  for (const [name, fn] of Object.entries(handlers)) es.addEventListener(name, (e) => fn(JSON.parse(e.data)));
  // A stream that ended on purpose ("end", "failure") must not be reopened.
  const stop = () => es.close();
  es.addEventListener("end", stop);
  es.addEventListener("failure", stop);
  return stop;
}

/**
 * The latest data of event `event` on stream `path` (undefined until the first), as a hook.
 * @param {string | null} path @param {string} event
 */
export function useStream(path, event) {
  const [data, setData] = useState(undefined);
  const [failure, setFailure] = useState(undefined);
  useEffect(() => {
    setData(undefined);
    setFailure(undefined);
    if (!path) return undefined;
    return subscribe(path, { [event]: setData, failure: setFailure });
  }, [path, event]);
  return [data, failure];
}

/** The cluster overview stream (jobs, workers, endpoints), shared by every view that needs it. */
let overview = { data: undefined, listeners: new Set(), close: undefined };
/** The latest overview snapshot, live. */
export function useOverview() {
  const [data, setData] = useState(overview.data);
  useEffect(() => {
    overview.listeners.add(setData);
    if (!overview.close)
      overview.close = subscribe("/api/stream/overview", {
        overview: (d) => {
          overview.data = d;
          for (const l of overview.listeners) l(d);
        },
      });
    return () => overview.listeners.delete(setData);
  }, []);
  return data;
}

/** `/alice/job` → `#/job/%2Falice%2Fjob`. @param {string} view @param {string} [arg] @param {Record<string,string>} [query] */
export function href(view, arg, query) {
  const q = query ? new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== "")).toString() : "";
  return `#/${view}${arg !== undefined ? `/${encodeURIComponent(arg)}` : ""}${q ? `?${q}` : ""}`;
}

/** 1536 → "1.5 KiB". @param {number} n */
export function bytes(n) {
  n = Number(n) || 0;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n >= 10 || i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
}

/** Millicores as cores: 1500 → "1.5". @param {number} m */
export function cores(m) {
  const c = (Number(m) || 0) / 1000;
  return Number.isInteger(c) ? String(c) : c.toFixed(2);
}

/** A duration in ms as "4.2s", "3m05s", "2h07m". @param {number} ms */
export function duration(ms) {
  const s = Math.max(0, Number(ms) || 0) / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

/** How long ago a time (ms since the epoch) was: "3s ago". @param {number} t */
export function ago(t) {
  const v = Number(t) || 0;
  return v ? `${duration(Date.now() - v)} ago` : "—";
}

/** A local time stamp. @param {number} t */
export function time(t) {
  const v = Number(t) || 0;
  return v ? new Date(v).toLocaleString() : "—";
}

/** A state as a colored badge. @param {{ state: string }} p */
export function State({ state }) {
  const s = String(state || "UNKNOWN");
  return html`<span class=${`badge s-${s.toLowerCase()}`}>${s}</span>`;
}

/** The first segment of a job name: `/alice/x` → "alice". @param {string} name */
export const userOf = (name) => String(name).split("/")[1] ?? "";

/** A live clock tick (re-renders every `ms`), for "ago" texts. @param {number} ms */
export function useTick(ms) {
  const [, set] = useState(0);
  useEffect(() => {
    const t = setInterval(() => set((n) => n + 1), ms);
    return () => clearInterval(t);
  }, [ms]);
}
