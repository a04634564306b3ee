// The endpoint proxy's documented bounds, which clients use too (a capability URL's lifetime, an
// endpoint's proxy timeout): here, not in http/endpointProxy.ts, so that @marin/iris/client has
// them without the HTTP plumbing.

/** Endpoint metadata key: the proxy's timeout for that endpoint, in milliseconds. */
export const PROXY_TIMEOUT_KEY = "proxy_timeout_ms";
/** The proxy timeout when the endpoint's metadata sets none (5 min: long generations). */
export const DEFAULT_PROXY_TIMEOUT_MS = 300_000;
/** `proxy_timeout_ms` is clamped to this range. */
export const PROXY_TIMEOUT_RANGE_MS = { min: 100, max: 3_600_000 } as const;
/** Capability token lifetime: the default and the clamp, in seconds. */
export const CAPABILITY_TTL_S = { default: 3600, min: 60, max: 86_400 } as const;
