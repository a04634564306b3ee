// The dashboard's Cluster view: the autoscaler's scale groups and its decision log, from
// `POST /api/GetClusterStatus` (polled every 2 s). Self-contained so it can move with the HTTP
// routing; a controller without an autoscaler says so.
import { useEffect, useState } from "preact/hooks";
import { api, duration, html, time } from "./lib.mjs";

export function ClusterView() {
  const [status, setStatus] = useState(undefined);
  const [failure, setFailure] = useState(undefined);
  useEffect(() => {
    let stop = false;
    let timer;
    const poll = () =>
      api("GetClusterStatus")
        .then((r) => {
          if (stop) return;
          setStatus(JSON.parse(r.statusJson));
          setFailure(undefined);
        })
        .catch((e) => !stop && setFailure(e))
        .finally(() => {
          if (!stop) timer = setTimeout(poll, 2000);
        });
    poll();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, []);
  if (failure && !status) {
    return html`<section aria-labelledby="h-cluster">
      <h1 id="h-cluster">Cluster</h1>
      <p class="muted">
        ${failure.code === "FAILED_PRECONDITION" ? "This controller runs no autoscaler (start one with iris cluster up --config FILE)." : `${failure.code}: ${failure.message}`}
      </p>
    </section>`;
  }
  if (!status) return html`<p class="muted" role="status">Loading the cluster…</p>`;
  return html`<section aria-labelledby="h-cluster">
    <h1 id="h-cluster">Cluster</h1>
    <h2>Scale groups</h2>
    <div class="scroll">
      <table>
        <thead>
          <tr>
            <th>Group</th>
            <th>Provider</th>
            <th>Min</th>
            <th>Max</th>
            <th>Pending</th>
            <th>Booting</th>
            <th>Ready</th>
            <th>Idle</th>
            <th>Draining</th>
            <th>Demand</th>
            <th>Backoff</th>
          </tr>
        </thead>
        <tbody>
          ${status.groups.map(
            (g) =>
              html`<tr key=${g.name}>
                <td class="mono">${g.name}</td>
                <td>${g.provider}</td>
                <td>${g.minWorkers}</td>
                <td>${g.maxWorkers}</td>
                <td>${g.pending}</td>
                <td>${g.booting}</td>
                <td>${g.ready}</td>
                <td>${g.idle}</td>
                <td>${g.draining}</td>
                <td>${g.demand.tasks ? `${g.demand.tasks} tasks (${g.demand.units} units)` : "–"}</td>
                <td>${g.backoffUntilMs > status.atMs ? `${duration(g.backoffUntilMs - status.atMs)} (boot failed ${g.failedBoots}×)` : "–"}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
    <h2>Decisions</h2>
    ${status.decisions.length ? null : html`<p class="muted">No decision yet.</p>`}
    <ol class="plain decisions">
      ${[...status.decisions].reverse().map((d, i) => html`<li key=${i}><span class="muted">${time(d.atMs)}</span> ${d.kind === "error" ? html`<span class="error">error: ${d.reason}</span>` : d.reason}</li>`)}
    </ol>
  </section>`;
}
