// Who is calling: the controller's authenticator turns the `authorization` header of a gRPC call
// or an HTTP request into a Principal (or undefined: unauthenticated). Every face of the
// controller (gRPC services, the HTTP API, the endpoint proxy, the dashboard) asks it.
import type * as grpc from "@grpc/grpc-js";
import { isAuthorized } from "../internal/rpc.ts";

/** What a caller may do: see the iris README's security section. */
export type Role = "admin" | "user" | "worker" | "task";

/** An authenticated caller. */
export interface Principal {
  /** The user the caller acts for (job names are placed under it). */
  user: string;
  role: Role;
  /** Task tokens only: the full name of the attempt's job; the token acts within that job's tree. */
  job?: string;
}

/** Whether `name` is `root` or below it (`/u/a` covers `/u/a` and `/u/a/b`, not `/u/ab`). */
export function inTree(root: string, name: string): boolean {
  return name === root || name.startsWith(root.endsWith("/") ? root : `${root}/`);
}

/**
 * Whether a caller may terminate or change job `jobName` (a full `/user/job…` name): admins any;
 * users jobs under `/<user>`; task tokens their own job's tree; workers none.
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

/** Maps credentials to a Principal; `enabled` is false when the cluster has no auth at all. */
export interface Authenticator {
  readonly enabled: boolean;
  /** The caller behind an `authorization` header value (`Bearer <token>`), or undefined. */
  fromAuthorization(header: string | undefined): Principal | undefined;
}

/** The principal of every caller of a cluster without auth (a local cluster). */
export const LOCAL_ADMIN: Principal = { user: "admin", role: "admin" };

/** One shared token (the `--token` shorthand): its holder is `admin`. No token: auth off. */
export function singleTokenAuthenticator(token: string | undefined): Authenticator {
  const enabled = token !== undefined && token !== "";
  return {
    enabled,
    fromAuthorization(header) {
      if (!enabled) return LOCAL_ADMIN;
      if (header === undefined) return undefined;
      const md = { get: () => [header] } as unknown as grpc.Metadata;
      return isAuthorized(md, token) ? LOCAL_ADMIN : undefined;
    },
  };
}

/** The caller of a gRPC call, from its metadata. */
export function principalOfCall(auth: Authenticator, metadata: grpc.Metadata): Principal | undefined {
  const v = metadata.get("authorization")[0];
  return auth.fromAuthorization(typeof v === "string" ? v : undefined);
}
