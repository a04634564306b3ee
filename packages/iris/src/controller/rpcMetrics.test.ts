// ControllerMetrics: handlers counted and timed by method and code; scheduler passes timed.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { ControllerMetrics } from "./rpcMetrics.ts";

describe("ControllerMetrics", () => {
  it("counts unary calls by method and status code, times them, counts stream starts", () => {
    const m = new ControllerMetrics();
    const h = m.instrument({
      Ok: (_call: unknown, cb: (e: unknown, v?: unknown) => void) => cb(null, { x: 1 }),
      Bad: (_call: unknown, cb: (e: unknown, v?: unknown) => void) => cb({ code: grpc.status.NOT_FOUND, details: "no" }),
      Watch: (_call: unknown) => undefined,
    });
    let got: unknown;
    h.Ok({}, (_e, v) => (got = v));
    h.Ok({}, () => undefined);
    h.Bad({}, () => undefined);
    h.Watch({});
    expect(got).toEqual({ x: 1 });
    m.timeScheduler(() => 1);
    const text = m.prometheusLines().join("\n");
    expect(text).toContain('iris_rpc_requests_total{method="Ok",code="OK"} 2');
    expect(text).toContain('iris_rpc_requests_total{method="Bad",code="NOT_FOUND"} 1');
    expect(text).toContain('iris_rpc_requests_total{method="Watch",code="STARTED"} 1');
    expect(text).toContain('iris_rpc_duration_seconds_count{method="Ok"} 2');
    expect(text).toContain('iris_rpc_duration_seconds_bucket{method="Ok",le="+Inf"} 2');
    expect(text).toContain("iris_scheduler_cycle_seconds_count 1");
  });
});
