// Live training charts of one task (uPlot): loss, learning rate, tokens/s and MFU against step,
// with the current step, ETA and last checkpoint, from the task's metrics stream.
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { html } from "./lib.mjs";

/** The charts and the metric keys each draws (levanter's names; see its trainer README). */
const CHARTS = [
  { title: "Loss", keys: ["train/loss", "eval/loss"], colors: ["#2563eb", "#dc2626"] },
  { title: "Learning rate", keys: ["optim/learning_rate"], colors: ["#7c3aed"] },
  { title: "Tokens per second", keys: ["throughput/tokens_per_second"], colors: ["#059669"] },
  { title: "MFU (%)", keys: ["throughput/mfu"], colors: ["#d97706"] },
];

function Chart({ title, keys, colors, points }) {
  const box = useRef(null);
  const plot = useRef(null);
  const present = keys.filter((k) => points.some((p) => p.metrics[k] !== undefined));
  const data = [points.map((p) => p.step), ...present.map((k) => points.map((p) => (p.metrics[k] === undefined ? null : p.metrics[k])))];
  const sig = present.join(",");
  useEffect(() => {
    const el = box.current;
    if (!el || !present.length) return undefined;
    const width = () => Math.max(240, el.clientWidth);
    const u = new uPlot(
      {
        width: width(),
        height: 180,
        scales: { x: { time: false } },
        axes: [{ label: "step" }, { size: 60 }],
        series: [{ label: "step" }, ...present.map((k) => ({ label: k, stroke: colors[keys.indexOf(k)], width: 2, spanGaps: true, points: { show: points.length < 60 } }))],
        legend: { live: false },
      },
      data,
      el,
    );
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: width(), height: 180 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [sig]);
  useEffect(() => {
    plot.current?.setData(data);
  });
  if (!present.length) return null;
  const last = points[points.length - 1];
  return html`<figure class="chart" data-chart=${title} data-points=${String(points.length)}>
    <figcaption>${title}${last ? html` <span class="muted">· ${present.map((k) => `${k.split("/").pop()} ${fmt(lastOf(points, k))}`).join(" · ")}</span>` : null}</figcaption>
    <div ref=${box} class="plot" role="img" aria-label=${`${title} against step`}></div>
  </figure>`;
}

function lastOf(points, key) {
  for (let i = points.length - 1; i >= 0; i--) if (points[i].metrics[key] !== undefined) return points[i].metrics[key];
  return undefined;
}

function fmt(v) {
  if (v === undefined || v === null) return "—";
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential(2) : a < 10 ? v.toFixed(4) : v.toFixed(1);
}

/** A task's metrics, live from `/api/stream/metrics`. */
export function TrainingCharts({ taskId }) {
  const [points, setPoints] = useState([]);
  const [statusText, setStatusText] = useState("");
  const [failure, setFailure] = useState(undefined);
  useEffect(() => {
    setPoints([]);
    const es = new EventSource(`/api/stream/metrics?task=${encodeURIComponent(taskId)}`, { withCredentials: true });
    es.addEventListener("metrics", (e) => {
      const m = JSON.parse(e.data);
      setStatusText(m.statusText ?? "");
      const fresh = m.points.map((p) => ({ step: Number(p.step), timeMs: Number(p.timeMs), metrics: p.metrics }));
      setPoints((old) => (m.reset ? fresh : old.concat(fresh)));
    });
    es.addEventListener("failure", (e) => {
      setFailure(JSON.parse(e.data));
      es.close();
    });
    return () => es.close();
  }, [taskId]);
  if (failure) return html`<p class="muted">No metrics: ${failure.message}</p>`;
  if (!points.length) return html`<p class="muted" data-testid="no-metrics">Task ${taskId} reports no metrics${statusText ? ` · ${statusText}` : ""}.</p>`;
  const last = points[points.length - 1];
  const eta = /ETA ([0-9hms]+)/.exec(statusText)?.[1];
  const ckpt = lastOf(points, "checkpoint/step");
  return html`<div class="training" data-testid="training">
    <dl class="facts">
      <dt>Step</dt>
      <dd data-testid="current-step">${last.step}</dd>
      <dt>ETA</dt>
      <dd>${eta ?? "—"}</dd>
      <dt>Last checkpoint</dt>
      <dd>${ckpt !== undefined ? `step ${ckpt}` : "—"}</dd>
      <dt>Status</dt>
      <dd class="status">${statusText || "—"}</dd>
    </dl>
    <div class="charts">${CHARTS.map((c) => html`<${Chart} key=${c.title} ...${c} points=${points} />`)}</div>
  </div>`;
}
