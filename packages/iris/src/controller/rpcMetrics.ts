// The controller's own timings for `/metrics`: RPC counts and latencies per method (every face:
// gRPC, the HTTP API, the dashboard's streams) and the scheduler's cycle time, as Prometheus text.
import * as grpc from "@grpc/grpc-js";
import { Histogram, LabeledCounter, PrometheusText } from "../toolkit/prometheus.ts";

/** Histogram bucket bounds in seconds (Prometheus `le`). */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type AnyHandler = (call: unknown, callback?: (err: unknown, value?: unknown) => void) => void;

/**
 * RPC and scheduler timings of one controller. `instrument` wraps a service's handler map: a
 * unary or client-stream call is timed until its callback, a server stream is counted when it
 * starts (its length is the client's choice, not a latency).
 */
export class ControllerMetrics {
  private readonly rpcCounts = new LabeledCounter();
  private readonly rpcLatency = new Map<string, Histogram>();
  private readonly scheduler = new Histogram(BUCKETS);

  /** The same handlers, each counted and timed under its method name. */
  instrument<H extends object>(handlers: H): H {
    const out: Record<string, AnyHandler> = {};
    for (const [method, fn] of Object.entries(handlers as Record<string, AnyHandler>)) {
      if (fn.length >= 2) {
        out[method] = (call, callback) => {
          const t0 = process.hrtime.bigint();
          fn(call, (err, value) => {
            this.record(method, err, Number(process.hrtime.bigint() - t0) / 1e9);
            callback!(err, value);
          });
        };
      } else {
        out[method] = (call) => {
          this.count(method, "STARTED");
          fn(call);
        };
      }
    }
    return out as H;
  }

  /** Runs one scheduler pass and records how long it took. */
  timeScheduler<T>(pass: () => T): T {
    const t0 = process.hrtime.bigint();
    try {
      return pass();
    } finally {
      this.scheduler.observe(Number(process.hrtime.bigint() - t0) / 1e9);
    }
  }

  private count(method: string, code: string): void {
    this.rpcCounts.inc({ method, code });
  }

  private record(method: string, err: unknown, seconds: number): void {
    const code = err ? (grpc.status[(err as Partial<grpc.StatusObject>).code ?? grpc.status.INTERNAL] ?? "UNKNOWN") : "OK";
    this.count(method, code);
    let h = this.rpcLatency.get(method);
    if (!h) this.rpcLatency.set(method, (h = new Histogram(BUCKETS)));
    h.observe(seconds);
  }

  /** The Prometheus text lines of these metrics. */
  prometheusLines(): string[] {
    const page = new PrometheusText();
    this.addTo(page);
    return page.lines();
  }

  /** Adds these metrics' families to a `/metrics` page. */
  addTo(page: PrometheusText): void {
    page.family(
      "iris_rpc_requests_total",
      "counter",
      "RPCs handled, by method and status code (server streams: counted when they start).",
      this.rpcCounts.samples("iris_rpc_requests_total"),
    );
    const latency = [...this.rpcLatency].sort((a, b) => a[0].localeCompare(b[0])).flatMap(([method, h]) => h.samples("iris_rpc_duration_seconds", { method }));
    page.family("iris_rpc_duration_seconds", "histogram", "Latency of unary and client-stream RPCs, by method.", latency);
    page.family("iris_scheduler_cycle_seconds", "histogram", "Time of one scheduler pass.", this.scheduler.samples("iris_scheduler_cycle_seconds"));
    page.single("iris_scheduler_last_cycle_seconds", "gauge", "Time of the latest scheduler pass.", this.scheduler.last);
  }
}
