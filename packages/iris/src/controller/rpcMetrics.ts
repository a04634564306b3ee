// The controller's own timings for `/metrics`: RPC counts and latencies per method (every face:
// gRPC, the HTTP API, the dashboard's streams) and the scheduler's cycle time, as Prometheus text.
import * as grpc from "@grpc/grpc-js";

/** Histogram bucket bounds in seconds (Prometheus `le`). */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

class Histogram {
  readonly counts = BUCKETS.map(() => 0);
  count = 0;
  sum = 0;
  last = 0;

  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    this.last = seconds;
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) this.counts[i]!++;
  }

  lines(name: string, labels: string): string[] {
    const sep = labels ? `${labels},` : "";
    const out = BUCKETS.map((b, i) => `${name}_bucket{${sep}le="${b}"} ${this.counts[i]}`);
    out.push(`${name}_bucket{${sep}le="+Inf"} ${this.count}`, `${name}_sum${labels ? `{${labels}}` : ""} ${this.sum}`, `${name}_count${labels ? `{${labels}}` : ""} ${this.count}`);
    return out;
  }
}

type AnyHandler = (call: unknown, callback?: (err: unknown, value?: unknown) => void) => void;

/**
 * RPC and scheduler timings of one controller. `instrument` wraps a service's handler map: a
 * unary or client-stream call is timed until its callback, a server stream is counted when it
 * starts (its length is the client's choice, not a latency).
 */
export class ControllerMetrics {
  private readonly rpcCounts = new Map<string, number>();
  private readonly rpcLatency = new Map<string, Histogram>();
  private readonly scheduler = new Histogram();

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
    const key = `method="${method}",code="${code}"`;
    this.rpcCounts.set(key, (this.rpcCounts.get(key) ?? 0) + 1);
  }

  private record(method: string, err: unknown, seconds: number): void {
    const code = err ? (grpc.status[(err as Partial<grpc.StatusObject>).code ?? grpc.status.INTERNAL] ?? "UNKNOWN") : "OK";
    this.count(method, code);
    let h = this.rpcLatency.get(method);
    if (!h) this.rpcLatency.set(method, (h = new Histogram()));
    h.observe(seconds);
  }

  /** The Prometheus text of these metrics. */
  prometheusLines(): string[] {
    const lines = ["# HELP iris_rpc_requests_total RPCs handled, by method and status code (server streams: counted when they start).", "# TYPE iris_rpc_requests_total counter"];
    for (const [k, n] of [...this.rpcCounts].sort()) lines.push(`iris_rpc_requests_total{${k}} ${n}`);
    lines.push("# HELP iris_rpc_duration_seconds Latency of unary and client-stream RPCs, by method.", "# TYPE iris_rpc_duration_seconds histogram");
    for (const [m, h] of [...this.rpcLatency].sort((a, b) => a[0].localeCompare(b[0]))) lines.push(...h.lines("iris_rpc_duration_seconds", `method="${m}"`));
    lines.push("# HELP iris_scheduler_cycle_seconds Time of one scheduler pass.", "# TYPE iris_scheduler_cycle_seconds histogram", ...this.scheduler.lines("iris_scheduler_cycle_seconds", ""));
    lines.push("# HELP iris_scheduler_last_cycle_seconds Time of the latest scheduler pass.", "# TYPE iris_scheduler_last_cycle_seconds gauge", `iris_scheduler_last_cycle_seconds ${this.scheduler.last}`);
    return lines;
  }
}
