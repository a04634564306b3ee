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
