// Pipeline runs (marin) as DAGs: each step's state, duration, output path and explain text, live
// from `/api/stream/pipelines`; a step that ran as an iris job links to that job (its charts).
import { useState } from "preact/hooks";
import { duration, href, html, time, useStream } from "./lib.mjs";

const NODE_W = 180;
const NODE_H = 54;
const GAP_X = 50;
const GAP_Y = 18;

/** Columns by longest path from a root; rows in input order. */
function layout(steps) {
  const byName = new Map(steps.map((s) => [s.name, s]));
  const depth = new Map();
  const depthOf = (s, seen = new Set()) => {
    if (depth.has(s.name)) return depth.get(s.name);
    if (seen.has(s.name)) return 0;
    seen.add(s.name);
    const d = Math.max(-1, ...s.deps.map((n) => (byName.has(n) ? depthOf(byName.get(n), seen) : -1))) + 1;
    depth.set(s.name, d);
    return d;
  };
  const cols = [];
  for (const s of steps) (cols[depthOf(s)] ??= []).push(s);
  const pos = new Map();
  cols.forEach((col, c) => col.forEach((s, r) => pos.set(s.name, { x: 8 + c * (NODE_W + GAP_X), y: 8 + r * (NODE_H + GAP_Y) })));
  const width = 16 + cols.length * (NODE_W + GAP_X) - GAP_X;
  const height = 16 + Math.max(1, ...cols.map((c) => c.length)) * (NODE_H + GAP_Y) - GAP_Y;
  return { pos, width, height };
}

function Dag({ run, selected, onSelect }) {
  const { pos, width, height } = layout(run.steps);
  return html`<div class="scroll dag-box">
    <svg class="dag" width=${width} height=${height} viewBox=${`0 0 ${width} ${height}`} role="group" aria-label=${`steps of run ${run.runId}`}>
      ${run.steps.flatMap((s) =>
        s.deps
          .filter((d) => pos.has(d))
          .map((d) => {
            const a = pos.get(d);
            const b = pos.get(s.name);
            const x1 = a.x + NODE_W,
              y1 = a.y + NODE_H / 2,
              x2 = b.x,
              y2 = b.y + NODE_H / 2;
            return html`<path class="edge" d=${`M${x1},${y1} C${x1 + GAP_X / 2},${y1} ${x2 - GAP_X / 2},${y2} ${x2},${y2}`} />`;
          }),
      )}
      ${run.steps.map((s) => {
        const p = pos.get(s.name);
        return html`<g
          class=${`node st-${s.state}${selected === s.name ? " sel" : ""}`}
          transform=${`translate(${p.x},${p.y})`}
          tabindex="0"
          role="button"
          data-step=${s.name}
          data-state=${s.state}
          aria-label=${`${s.name}: ${s.state}`}
          onClick=${() => onSelect(s.name)}
          onKeyDown=${(e) => (e.key === "Enter" || e.key === " ") && (e.preventDefault(), onSelect(s.name))}
        >
          <rect width=${NODE_W} height=${NODE_H} rx="6" />
          <text x="10" y="21" class="nname">${s.name.length > 24 ? `${s.name.slice(0, 23)}…` : s.name}</text>
          <text x="10" y="41" class="nstate">${s.state}${s.durationMs !== undefined ? ` · ${duration(s.durationMs)}` : ""}</text>
        </g>`;
      })}
    </svg>
  </div>`;
}

function StepDetails({ step }) {
  if (!step) return html`<p class="muted">Select a step to see its output path and why it ran.</p>`;
  return html`<div class="step-details" data-testid="step-details">
    <h3>${step.name}</h3>
    <dl class="facts">
      <dt>State</dt>
      <dd>${step.state}</dd>
      <dt>Duration</dt>
      <dd>${step.durationMs !== undefined ? duration(step.durationMs) : "—"}</dd>
      <dt>Output</dt>
      <dd class="mono">${step.outputPath}</dd>
      ${
        step.job
          ? html`<dt>iris job</dt>
              <dd><a href=${href("job", step.job)}>${step.job}</a> (logs, training charts)</dd>`
          : null
      }
      ${
        step.progress
          ? html`<dt>Progress</dt>
              <dd>${step.progress}</dd>`
          : null
      }
    </dl>
    ${
      step.error
        ? html`<h4>Error</h4>
            <pre class="errtext">${step.error}</pre>`
        : null
    }
    ${
      step.explain
        ? html`<h4>Explain</h4>
            <pre class="explain">${step.explain}</pre>`
        : null
    }
  </div>`;
}

/** Every run reported to this controller; one run's DAG when `runId` is given. */
export function PipelinesView({ runId, query }) {
  const [data, failure] = useStream("/api/stream/pipelines", "pipelines");
  const [selected, setSelected] = useState(query.step);
  if (failure) return html`<p class="error" role="alert">${failure.message}</p>`;
  if (!data) return html`<p class="muted" role="status">Loading pipelines…</p>`;
  const runs = data.runs;
  const run = runId ? runs.find((r) => r.runId === runId) : runs[0];
  return html`<section aria-labelledby="h-pipelines">
    <h1 id="h-pipelines">Pipelines</h1>
    ${runs.length === 0 ? html`<p class="muted">No pipeline run reported yet: <code>marin run</code> reports its runs to the dashboard of its cluster.</p>` : null}
    ${
      runs.length > 1
        ? html`<label
            >Run
            <select value=${run?.runId} onChange=${(e) => (location.hash = href("pipelines", e.target.value))}>
              ${runs.map((r) => html`<option value=${r.runId}>${r.runId} (${r.state}${r.ok === false ? ", failed" : ""})</option>`)}
            </select></label
          >`
        : null
    }
    ${
      run
        ? html`<div data-testid="pipeline" data-run=${run.runId} data-state=${run.state}>
            <h2 class="wrap">
              ${run.runId}
              <span class=${`badge s-${run.state === "running" ? "running" : run.ok ? "succeeded" : "failed"}`}
                >${run.state === "running" ? "running" : run.ok ? "ok" : "failed"}</span
              >
            </h2>
            <p class="muted">
              prefix <span class="mono">${run.prefix}</span> · started ${time(run.startedAtMs)}${run.finishedAtMs ? ` · took ${duration(run.finishedAtMs - run.startedAtMs)}` : ""}
            </p>
            <${Dag} run=${run} selected=${selected} onSelect=${setSelected} />
            <${StepDetails} step=${run.steps.find((s) => s.name === selected)} />
          </div>`
        : null
    }
  </section>`;
}
