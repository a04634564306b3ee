// The code-bundle RPCs: UploadBundle (a client stream into the controller's BundleStore, deduplicated
// by id) and FetchBundle (a worker streams a stored bundle back, with back-pressure).
import * as grpc from "@grpc/grpc-js";
import fs from "node:fs";
import { IrisError } from "../errors.ts";
import type { ControllerServiceHandlers } from "../internal/generated/iris/v1/ControllerService.ts";
import type { WorkerControlServiceHandlers } from "../internal/generated/iris/v1/WorkerControlService.ts";
import type { Principal } from "./auth.ts";
import { BUNDLE_CHUNK_BYTES } from "./bundleStore.ts";
import type { BundleStore, BundleWriter } from "./bundleStore.ts";

/** The caller of a call allowed to use `method`, or the status that refuses it. */
export type Authorize = (call: { metadata: grpc.Metadata }, method: string) => Principal | Partial<grpc.StatusObject>;

/** The gRPC status of an error (IrisError code → status). */
export type ToStatus = (e: unknown) => Partial<grpc.StatusObject>;

/** Told when a stored bundle is used: `stored` is true when this call has just stored it. */
export type OnBundleUsed = (id: string, stored: boolean) => void;

/**
 * UploadBundle: the first message names the bundle and its size; a bundle already stored ends the
 * call at once (`uploaded: false`); otherwise the chunks are written and checked (size, hash).
 */
export function uploadBundleHandler(bundles: BundleStore, authorize: Authorize, toStatus: ToStatus, used: OnBundleUsed = () => {}): ControllerServiceHandlers["UploadBundle"] {
  return (call, callback) => {
    const who = authorize(call, "UploadBundle");
    if (!("role" in who)) return callback(who);
    let writer: BundleWriter | undefined;
    let announced: { bundleId: string; sizeBytes: number } | undefined;
    let stored: { bundleId: string; sizeBytes: number } | undefined;
    let failure: Partial<grpc.StatusObject> | undefined;
    const fail = (e: unknown): void => {
      writer?.abort();
      writer = undefined;
      failure ??= toStatus(e);
    };
    call.on("data", (req: { bundleId: string; sizeBytes: number; data: Buffer }) => {
      if (failure || stored) return;
      try {
        if (announced === undefined) {
          announced = { bundleId: req.bundleId, sizeBytes: Number(req.sizeBytes) };
          const size = bundles.size(req.bundleId);
          // Already stored: the rest of the stream is ignored.
          if (size !== undefined) return void (stored = { bundleId: req.bundleId, sizeBytes: size });
          writer = bundles.begin(req.bundleId, announced.sizeBytes);
        }
        if (req.data.length > 0) writer!.write(req.data);
      } catch (e) {
        fail(e);
      }
    });
    call.on("end", () => {
      if (failure) return callback(failure);
      if (stored) {
        used(stored.bundleId, false);
        return callback(null, { ...stored, uploaded: false });
      }
      if (writer === undefined || announced === undefined) {
        return callback({ code: grpc.status.INVALID_ARGUMENT, details: "UploadBundle: empty stream (the first message names the bundle)" });
      }
      try {
        writer.finish();
      } catch (e) {
        return callback(toStatus(e));
      }
      used(announced.bundleId, true);
      callback(null, { ...announced, uploaded: true });
    });
    call.on("error", () => fail(new IrisError("CANCELLED", "upload cancelled")));
  };
}

/** FetchBundle: streams a stored bundle to a worker in BUNDLE_CHUNK_BYTES chunks. */
export function fetchBundleHandler(
  bundles: BundleStore,
  authorize: (call: { metadata: grpc.Metadata; request: { bundleId: string } }, method: string) => ReturnType<Authorize>,
  toStatus: ToStatus,
  used: OnBundleUsed = () => {},
): WorkerControlServiceHandlers["FetchBundle"] {
  return (call) => {
    const p = authorize(call, "FetchBundle");
    if (!("role" in p)) return void call.emit("error", p);
    let file: string;
    let size: number | undefined;
    try {
      file = bundles.fileOf(call.request.bundleId);
      size = bundles.size(call.request.bundleId);
    } catch (e) {
      return void call.emit("error", toStatus(e));
    }
    if (size === undefined) return void call.emit("error", { code: grpc.status.NOT_FOUND, details: `bundle ${call.request.bundleId} is not stored on the controller` });
    const sizeBytes = size;
    used(call.request.bundleId, false);
    const stream = fs.createReadStream(file, { highWaterMark: BUNDLE_CHUNK_BYTES });
    stream.on("data", (data) => {
      if (!call.write({ data, sizeBytes })) {
        stream.pause();
        call.once("drain", () => stream.resume());
      }
    });
    stream.on("end", () => call.end());
    stream.on("error", (e) => call.emit("error", { code: grpc.status.INTERNAL, details: `reading bundle: ${e.message}` }));
    call.on("cancelled", () => stream.destroy());
  };
}
