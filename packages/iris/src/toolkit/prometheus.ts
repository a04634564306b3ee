// Prometheus text exposition (format 0.0.4), by hand: a few families of counters, gauges and
// histograms need no client library. https://prometheus.io/docs/instrumenting/exposition_formats/

export type MetricType = "counter" | "gauge" | "histogram";
/** Label names to values, or labels already written (`method="x",code="OK"`). */
export type Labels = Readonly<Record<string, string | number>> | string;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** Labels as written inside `{…}` (no braces); "" for none. */
export function labelText(labels: Labels | undefined): string {
  if (labels === undefined) return "";
  if (typeof labels === "string") return labels;
  return Object.entries(labels)
    .map(([k, v]) => `${k}="${escapeLabel(String(v))}"`)
    .join(",");
}

/** One sample line: `name{labels} value`. */
export function sampleLine(name: string, value: number, labels?: Labels): string {
  const l = labelText(labels);
  return `${name}${l ? `{${l}}` : ""} ${value}`;
}

/** A page of metric families in the order added; `text()` is the `/metrics` body. */
export class PrometheusText {
  readonly #lines: string[] = [];

  /** A family: its `# HELP` and `# TYPE` lines, then its sample lines. */
  family(name: string, type: MetricType, help: string, samples: Iterable<string>): this {
    this.#lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples);
    return this;
  }

  /** A family of one unlabelled sample. */
  single(name: string, type: "counter" | "gauge", help: string, value: number): this {
    return this.family(name, type, help, [sampleLine(name, value)]);
  }

  /** The lines so far. */
  lines(): string[] {
    return [...this.#lines];
  }

  /** The exposition text (newline-terminated). */
  text(): string {
    return `${this.#lines.join("\n")}\n`;
  }
}

/** Counts by label set; samples sorted by their labels so the text is stable. */
export class LabeledCounter {
  readonly #counts = new Map<string, number>();

  inc(labels: Labels, by = 1): void {
    const k = labelText(labels);
    this.#counts.set(k, (this.#counts.get(k) ?? 0) + by);
  }

  get(labels: Labels): number {
    return this.#counts.get(labelText(labels)) ?? 0;
  }

  samples(name: string): string[] {
    return [...this.#counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([k, n]) => sampleLine(name, n, k));
  }
}

/** A histogram with fixed upper bounds (Prometheus `le`, cumulative counts). */
export class Histogram {
  readonly buckets: readonly number[];
  readonly counts: number[];
  count = 0;
  sum = 0;
  /** The latest observation (0 before any). */
  last = 0;

  constructor(buckets: readonly number[]) {
    for (let i = 1; i < buckets.length; i++) if (!(buckets[i]! > buckets[i - 1]!)) throw new RangeError(`histogram buckets must increase, got ${buckets.join(", ")}`);
    this.buckets = [...buckets];
    this.counts = buckets.map(() => 0);
  }

  observe(value: number): void {
    this.count++;
    this.sum += value;
    this.last = value;
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) this.counts[i]!++;
  }

  /** `<name>_bucket{…,le="…"}` for each bound and `+Inf`, then `<name>_sum` and `<name>_count`. */
  samples(name: string, labels?: Labels): string[] {
    const l = labelText(labels);
    const sep = l ? `${l},` : "";
    const out = this.buckets.map((b, i) => `${name}_bucket{${sep}le="${b}"} ${this.counts[i]}`);
    out.push(`${name}_bucket{${sep}le="+Inf"} ${this.count}`, sampleLine(`${name}_sum`, this.sum, l), sampleLine(`${name}_count`, this.count, l));
    return out;
  }
}
