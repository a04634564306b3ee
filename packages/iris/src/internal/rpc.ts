// Loading the wire contract and the plumbing every side of it shares: typed clients with the
// bearer token attached, server-side token checks, and gRPC errors turned into IrisErrors.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import tls from "node:tls";
import { IrisError, irisCodeOf } from "../errors.ts";
import type { ProtoGrpcType as ControllerProto } from "./generated/controller.ts";
import type { ControllerServiceClient } from "./generated/iris/v1/ControllerService.ts";
import type { WorkerControlServiceClient } from "./generated/iris/v1/WorkerControlService.ts";
import type { ProtoGrpcType as WorkerProto } from "./generated/worker.ts";
import { IRIS_PACKAGE_ROOT, PROTO_ENTRY_FILES, PROTO_LOADER_OPTIONS } from "./protoGen.ts";

export type { ControllerServiceClient } from "./generated/iris/v1/ControllerService.ts";
export type { WorkerControlServiceClient } from "./generated/iris/v1/WorkerControlService.ts";

/** The loaded `iris.v1` package: service constructors and definitions. */
export type IrisProto = ControllerProto["iris"]["v1"] & WorkerProto["iris"]["v1"];

let cached: IrisProto | undefined;

/** Loads `proto/iris/v1` once per process, with the options the generated types assume. */
export function loadIrisProto(): IrisProto {
  if (cached) return cached;
  const def = protoLoader.loadSync(
    PROTO_ENTRY_FILES.map((f) => path.join(IRIS_PACKAGE_ROOT, "proto", f)),
    { ...PROTO_LOADER_OPTIONS, includeDirs: [path.join(IRIS_PACKAGE_ROOT, "proto")] },
  );
  const pkg = grpc.loadPackageDefinition(def) as unknown as ControllerProto & WorkerProto;
  cached = pkg.iris.v1;
  return cached;
}

/** Options for the typed clients. */
export interface RpcClientOptions {
  /**
   * Bearer token sent as `authorization: Bearer <token>` on every call; a function is asked on
   * every call (a worker swaps its worker token for its session at registration).
   */
  token?: string | (() => string | undefined) | undefined;
  /**
   * TLS: the CA certificate (a PEM file path, or the PEM text itself) the controller's certificate
   * must chain to. Default: `IRIS_TLS_CA` when set, else plaintext.
   */
  tlsCa?: string | undefined;
  /**
   * grpc-js's reconnect backoff, ms: the first retry after a lost connection and the cap
   * (default 200 and 2000; grpc-js alone would back off up to 2 minutes).
   */
  reconnectBackoffMs?: { initial: number; max: number };
}

/** A client channel's credentials and the channel options that go with them. */
export interface ChannelSecurity {
  credentials: grpc.ChannelCredentials;
  options: grpc.ChannelOptions;
}

/** The name sent as TLS SNI to a controller addressed by IP (RFC 6066 forbids an IP there). */
const SNI_FOR_IP = "iris-controller.invalid";

/**
 * The host of a gRPC target: `host:port`, `[v6]:port`, a bare host, or those behind `dns:`,
 * `dns:///`, `ipv4:` or `ipv6:`; undefined for other schemes (`unix:`).
 */
export function targetHost(address: string): string | undefined {
  let rest = address;
  const scheme = /^(?:dns|ipv4|ipv6):(?:\/\/[^/]*\/)?/i.exec(rest);
  if (scheme) rest = rest.slice(scheme[0].length);
  else if (/^[a-z][a-z0-9+.-]*:/i.test(rest) && !/^[^:]+:\d+$/.test(rest)) return undefined;
  if (net.isIP(rest) !== 0) return rest;
  const v6 = /^\[([^\]]+)\](?::\d+)?$/.exec(rest);
  if (v6) return v6[1];
  const host = rest.replace(/:\d+$/, "");
  return host === "" ? undefined : host;
}

/**
 * The channel credentials of a client of `address`: TLS trusting `tlsCa` (a PEM file or PEM text;
 * default `IRIS_TLS_CA`), plaintext when there is none. An unreadable CA file is INVALID_ARGUMENT.
 *
 * A controller addressed by IP is still verified against that IP (its certificate must carry it
 * as an IP subjectAltName), but the TLS server name sent is a placeholder: grpc-js would send the
 * IP, which RFC 6066 forbids and Node answers with a DEP0123 warning on every such process.
 */
export function channelSecurity(address: string, tlsCa: string | undefined = process.env.IRIS_TLS_CA): ChannelSecurity {
  if (tlsCa === undefined || tlsCa === "") return { credentials: grpc.credentials.createInsecure(), options: {} };
  let pem: Buffer;
  if (tlsCa.includes("-----BEGIN")) pem = Buffer.from(tlsCa);
  else {
    try {
      pem = fs.readFileSync(tlsCa);
    } catch (e) {
      throw new IrisError("INVALID_ARGUMENT", `TLS CA ${tlsCa}: ${(e as Error).message}`);
    }
  }
  const host = targetHost(address);
  if (host === undefined || net.isIP(host) === 0) return { credentials: grpc.credentials.createSsl(pem), options: {} };
  // grpc-js hands the check the override name: this one checks the address actually dialled.
  const credentials = grpc.credentials.createSsl(pem, null, null, { checkServerIdentity: (_name, cert) => tls.checkServerIdentity(host, cert) });
  return { credentials, options: { "grpc.ssl_target_name_override": SNI_FOR_IP } };
}

// Every call gets the token through an interceptor: grpc-js sends call credentials only on
// secure channels, and the loopback/cluster channels here are insecure.
export function authInterceptor(token: string | (() => string | undefined)): grpc.Interceptor {
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        const t = typeof token === "function" ? token() : token;
        if (t) metadata.set("authorization", `Bearer ${t}`);
        next(metadata, listener);
      },
    });
}

function clientOptions(opts: RpcClientOptions, tlsOptions: grpc.ChannelOptions): grpc.ClientOptions {
  return {
    ...tlsOptions,
    interceptors: opts.token ? [authInterceptor(opts.token)] : [],
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
    "grpc.keepalive_time_ms": 30_000,
    // A controller that restarts is dialled again within 2 s (grpc-js would otherwise back off
    // to minutes), so workers reconcile before they are declared lost.
    "grpc.initial_reconnect_backoff_ms": opts.reconnectBackoffMs?.initial ?? 200,
    "grpc.max_reconnect_backoff_ms": opts.reconnectBackoffMs?.max ?? 2000,
  };
}

/** A client of the controller's client-facing service (`iris.v1.ControllerService`). */
export function createControllerClient(address: string, opts: RpcClientOptions = {}): ControllerServiceClient {
  const { ControllerService } = loadIrisProto();
  const sec = channelSecurity(address, opts.tlsCa);
  return new ControllerService(address, sec.credentials, clientOptions(opts, sec.options));
}

/** A client of the controller's worker-facing service (`iris.v1.WorkerControlService`). */
export function createWorkerControlClient(address: string, opts: RpcClientOptions = {}): WorkerControlServiceClient {
  const { WorkerControlService } = loadIrisProto();
  const sec = channelSecurity(address, opts.tlsCa);
  return new WorkerControlService(address, sec.credentials, clientOptions(opts, sec.options));
}

/**
 * Whether a call's metadata carries the expected bearer token (always true when `token` is
 * undefined: auth off). Compared in constant time.
 */
export function isAuthorized(metadata: grpc.Metadata, token: string | undefined): boolean {
  if (token === undefined || token === "") return true;
  const got = metadata.get("authorization")[0];
  if (typeof got !== "string") return false;
  const expected = Buffer.from(`Bearer ${token}`);
  const actual = Buffer.from(got);
  if (actual.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < actual.length; i++) diff |= actual[i]! ^ expected[i]!;
  return diff === 0;
}

/**
 * The IrisError of a failed call: the remote status name and message, the gRPC error as `cause`,
 * and the stack of `callSite` (captured where the local call was made, before any await).
 */
export function toIrisError(err: unknown, callSite?: Error): IrisError {
  if (err instanceof IrisError) return err;
  const e = err as Partial<grpc.ServiceError> | undefined;
  const code = typeof e?.code === "number" ? irisCodeOf(e.code) : "UNKNOWN";
  let message = typeof e?.details === "string" && e.details !== "" ? e.details : String((err as Error)?.message ?? err);
  if (code === "UNAVAILABLE" && /ERR_TLS_CERT_ALTNAME_INVALID|does not match certificate's altnames/.test(message)) {
    message += " (TLS: the controller's certificate is not issued for the address dialled; connect by a name or IP it lists as a subjectAltName)";
  } else if (code === "UNAVAILABLE" && /certificate|SSL|TLS|handshake|wrong version number/i.test(message)) {
    message +=
      " (TLS: the controller's certificate is not trusted by this client, or one side speaks TLS and the other does not; " +
      "give the CA that signed it with --tls-ca or IRIS_TLS_CA)";
  }
  const out = new IrisError(code, message, { cause: err });
  if (callSite?.stack) out.stack = `IrisError: ${code}: ${message}\n${callSite.stack.split("\n").slice(1).join("\n")}`;
  return out;
}

/**
 * Calls a unary method of a generated client as a promise, with IrisError on failure.
 *
 * @example
 * const status = await unary(client, "getJob", { name: "/alice/train" });
 */
export function unary<C extends grpc.Client, M extends keyof C & string>(
  client: C,
  method: M,
  request: UnaryRequest<C[M]>,
  opts: { deadlineMs?: number } = {},
): Promise<UnaryResponse<C[M]>> {
  const callSite = new Error("call site");
  return new Promise((resolve, reject) => {
    const options: grpc.CallOptions = opts.deadlineMs ? { deadline: Date.now() + opts.deadlineMs } : {};
    const fn = client[method] as unknown as (req: unknown, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void;
    fn.call(client, request, options, (err, res) => {
      if (err) reject(toIrisError(err, callSite));
      else resolve(res as UnaryResponse<C[M]>);
    });
  });
}

// Generated methods are overloaded; inference sees the last overload, `(argument, callback)`.
/** The request type of a generated unary method. */
export type UnaryRequest<F> = F extends (argument: infer A, callback: grpc.requestCallback<infer _R>) => grpc.ClientUnaryCall ? A : never;
/** The response type of a generated unary method. */
export type UnaryResponse<F> = F extends (argument: infer _A, callback: grpc.requestCallback<infer R>) => grpc.ClientUnaryCall ? R : never;
