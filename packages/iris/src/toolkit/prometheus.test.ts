import { describe, expect, it } from "vitest";
import { Histogram, LabeledCounter, PrometheusText, sampleLine } from "./prometheus.ts";

describe("prometheus text", () => {
  it("writes families with HELP and TYPE, sorted labelled counters and escaped labels", () => {
    const c = new LabeledCounter();
    c.inc({ route: "/b", status: 200 });
    c.inc({ route: "/a", status: 200 }, 2);
    c.inc({ route: "/b", status: 200 });
    expect(c.get({ route: "/b", status: 200 })).toBe(2);
    const page = new PrometheusText().family("x_total", "counter", "Requests.", c.samples("x_total")).single("x_up", "gauge", "Up.", 1);
    expect(page.text()).toBe(
      '# HELP x_total Requests.\n# TYPE x_total counter\nx_total{route="/a",status="200"} 2\nx_total{route="/b",status="200"} 2\n# HELP x_up Up.\n# TYPE x_up gauge\nx_up 1\n',
    );
    expect(sampleLine("m", 1, { v: 'a"b\\c\nd' })).toBe('m{v="a\\"b\\\\c\\nd"} 1');
  });

  it("histograms count cumulatively per bound, with +Inf, sum and count, labelled or not", () => {
    const h = new Histogram([0.1, 1]);
    for (const v of [0.05, 0.5, 5]) h.observe(v);
    expect(h.last).toBe(5);
    expect(h.samples("t")).toEqual(['t_bucket{le="0.1"} 1', 't_bucket{le="1"} 2', 't_bucket{le="+Inf"} 3', "t_sum 5.55", "t_count 3"]);
    expect(h.samples("t", { m: "f" })[0]).toBe('t_bucket{m="f",le="0.1"} 1');
    expect(h.samples("t", { m: "f" }).at(-1)).toBe('t_count{m="f"} 3');
    expect(() => new Histogram([1, 1])).toThrow(/increase/);
  });
});
