// The dashboard's cluster views: overview, jobs (filters), one job (tasks, attempts, pending
// reasons, child jobs, resources, results, training charts), logs, workers and endpoints.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { ago, api, bytes, endpointUrl, cores, duration, href, html, State, subscribe, time, useOverview, useStream, useTick, userOf } from "./lib.mjs";
import { TrainingCharts } from "./charts.mjs";

const JOB_STATES = ["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "KILLED", "UNSCHEDULABLE"];
const TERMINAL = new Set(["SUCCEEDED", "FAILED", "KILLED", "UNSCHEDULABLE"]);

function Loading({ what }) {
  return html`<p class="muted" role="status">Loading ${what}…</p>`;
}

function Failure({ failure }) {
  return failure ? html`<p class="error" role="alert">${failure.code}: ${failure.message}</p>` : null;
}

function jobDuration(j) {
  const start = Number(j.submittedAtMs) || 0;
  const end = Number(j.finishedAtMs) || Date.now();
  return start ? duration(end - start) : "—";
}

function TaskCounts({ counts }) {
  const entries = Object.entries(counts ?? {}).filter(([, n]) => n > 0);
  return html`<span class="counts">${entries.map(([s, n]) => html`<span class=${`chip s-${s.toLowerCase()}`} title=${s}>${n} ${s.toLowerCase()}</span>`)}</span>`;
}

function JobTable({ jobs, empty }) {
  if (!jobs.length) return html`<p class="muted">${empty}</p>`;
  return html`<div class="scroll">
    <table>
      <thead>
        <tr>
          <th>Job</th>
          <th>State</th>
          <th>Tasks</th>
          <th>Submitted</th>
          <th>Duration</th>
        </tr>
      </thead>
      <tbody>
        ${jobs.map(
          (j) =>
            html`<tr key=${j.instanceId}>
              <td><a href=${href("job", j.name)}>${j.name}</a></td>
              <td><${State} state=${j.state} /></td>
              <td><${TaskCounts} counts=${j.taskCounts} /></td>
              <td>${time(j.submittedAtMs)}</td>
              <td>${jobDuration(j)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function Meter({ label, used, total, format }) {
  const pct = total > 0 ? Math.min(100, (100 * used) / total) : 0;
  return html`<div class="meter">
    <div class="meter-label"><span>${label}</span><span>${format(used)} used · ${format(Math.max(0, total - used))} free of ${format(total)}</span></div>
    <div class="bar" role="meter" aria-label=${label} aria-valuemin="0" aria-valuemax="100" aria-valuenow=${Math.round(pct)}><div style=${`width:${pct}%`}></div></div>
  </div>`;
}

/** Workers, capacity used and free, jobs by state, the latest jobs. */
export function OverviewView() {
  const o = useOverview();
  useTick(5000);
  if (!o) return html`<${Loading} what="the cluster" />`;
  const alive = o.workers.filter((w) => w.state === "ALIVE");
  const sum = (list, f) => list.reduce((a, w) => a + (Number(f(w)) || 0), 0);
  const byState = {};
  for (const j of o.jobs) byState[j.state] = (byState[j.state] ?? 0) + 1;
  const recent = [...o.jobs].sort((a, b) => Number(b.submittedAtMs) - Number(a.submittedAtMs)).slice(0, 10);
  return html`<section aria-labelledby="h-overview">
    <h1 id="h-overview">Overview</h1>
    <div class="cards">
      <div class="card">
        <div class="big">${alive.length}</div>
        <div>workers alive</div>
        ${o.workers.length > alive.length ? html`<div class="muted">${o.workers.length - alive.length} lost</div>` : null}
      </div>
      <div class="card">
        <div class="big">${o.jobs.length}</div>
        <div>jobs</div>
      </div>
      <div class="card">
        <div class="big">${o.endpoints.length}</div>
        <div>endpoints</div>
      </div>
    </div>
    <h2>Capacity</h2>
    <${Meter} label="CPU (cores)" used=${sum(alive, (w) => w.used?.cpuMillis)} total=${sum(alive, (w) => w.capacity?.cpuMillis)} format=${cores} />
    <${Meter} label="Memory" used=${sum(alive, (w) => w.used?.memoryBytes)} total=${sum(alive, (w) => w.capacity?.memoryBytes)} format=${bytes} />
    <h2>Jobs by state</h2>
    <ul class="states">
      ${JOB_STATES.map(
        (s) =>
          html`<li>
            <a href=${href("jobs", undefined, { state: s })}><${State} state=${s} /> <strong>${byState[s] ?? 0}</strong></a>
          </li>`,
      )}
    </ul>
    <h2>Latest jobs</h2>
    <${JobTable} jobs=${recent} empty="No jobs yet." />
  </section>`;
}

/** Every job, filtered by state, user and name prefix (the filters live in the URL). */
export function JobsView({ query }) {
  const o = useOverview();
  const [state, setState] = useState(query.state ?? "");
  const [user, setUser] = useState(query.user ?? "");
  const [prefix, setPrefix] = useState(query.prefix ?? "");
  useEffect(() => {
    const q = new URLSearchParams(Object.entries({ state, user, prefix }).filter(([, v]) => v)).toString();
    history.replaceState(null, "", `#/jobs${q ? `?${q}` : ""}`);
  }, [state, user, prefix]);
  if (!o) return html`<${Loading} what="jobs" />`;
  const users = [...new Set(o.jobs.map((j) => userOf(j.name)))].sort();
  const jobs = o.jobs
    .filter((j) => (!state || j.state === state) && (!user || userOf(j.name) === user) && (!prefix || j.name.startsWith(prefix)))
    .sort((a, b) => Number(b.submittedAtMs) - Number(a.submittedAtMs));
  return html`<section aria-labelledby="h-jobs">
    <h1 id="h-jobs">Jobs</h1>
    <form class="filters" onSubmit=${(e) => e.preventDefault()}>
      <label
        >State
        <select value=${state} onChange=${(e) => setState(e.target.value)}>
          <option value="">any</option>
          ${JOB_STATES.map((s) => html`<option value=${s}>${s}</option>`)}
        </select></label
      >
      <label
        >User
        <select value=${user} onChange=${(e) => setUser(e.target.value)}>
          <option value="">any</option>
          ${users.map((u) => html`<option value=${u}>${u}</option>`)}
        </select></label
      >
      <label>Name prefix <input value=${prefix} placeholder="/alice/train" onInput=${(e) => setPrefix(e.target.value)} /></label>
    </form>
    <p class="muted">${jobs.length} of ${o.jobs.length} jobs</p>
    <${JobTable} jobs=${jobs} empty="No job matches." />
  </section>`;
}

/** Child jobs of `name` as a nested list (names below it, by path). */
function ChildTree({ name, jobs }) {
  const below = jobs.filter((j) => j.name.startsWith(`${name}/`));
  if (!below.length) return html`<p class="muted">No child jobs.</p>`;
  const direct = (parent) => below.filter((j) => j.name.slice(0, j.name.lastIndexOf("/")) === parent);
  const node = (j) =>
    html`<li key=${j.name}>
      <a href=${href("job", j.name)}>${j.name.slice(name.length + 1)}</a> <${State} state=${j.state} /> ${
        direct(j.name).length
          ? html`<ul>
              ${direct(j.name).map(node)}
            </ul>`
          : null
      }
    </li>`;
  // Jobs whose parent is not listed (deeper names) hang from the root.
  const roots = below.filter((j) => !below.some((p) => j.name.startsWith(`${p.name}/`)));
  return html`<ul class="tree">
    ${roots.map(node)}
  </ul>`;
}

function Attempts({ task }) {
  if (!task.attempts?.length) return html`<span class="muted">none yet</span>`;
  return html`<ol class="attempts">
    ${task.attempts.map(
      (a) =>
        html`<li key=${a.attemptUid}>
          <strong>#${a.attempt}</strong> <${State} state=${a.state} /> on ${a.workerId || "—"}
          ${a.failureKind ? html` · <span class="failure" data-failure=${a.failureKind}>${a.failureKind}${a.exitCode !== undefined && a.exitCode !== null ? `(${a.exitCode})` : ""}</span>` : a.exitCode !== undefined && a.exitCode !== null ? html` · exit ${a.exitCode}` : null}
          ${a.startedAtMs && Number(a.startedAtMs) ? html` · ${duration((Number(a.finishedAtMs) || Date.now()) - Number(a.startedAtMs))}` : null}
          ${a.error ? html`<div class="errtext">${a.error}</div>` : null}
        </li>`,
    )}
  </ol>`;
}

function resourcesText(spec) {
  const r = spec?.resources;
  if (!r) return "defaults";
  const parts = [];
  if (r.cpuMillis) parts.push(`${cores(r.cpuMillis)} CPU`);
  if (r.memoryBytes && Number(r.memoryBytes)) parts.push(bytes(r.memoryBytes));
  for (const d of r.devices ?? []) parts.push(`${d.count}× ${d.kind}`);
  return parts.join(" · ") || "defaults";
}

/** One job, live: its tasks and attempts, why tasks wait, its children, results and charts. */
export function JobView({ name, query }) {
  const [job, failure] = useStream(name ? `/api/stream/job?name=${encodeURIComponent(name)}` : null, "job");
  const o = useOverview();
  const [metricsTask, setMetricsTask] = useState(Number(query.task ?? 0) || 0);
  const [busy, setBusy] = useState("");
  useTick(2000);
  if (failure)
    return html`<section>
      <h1>${name}</h1>
      <${Failure} failure=${failure} />
    </section>`;
  if (!job) return html`<${Loading} what=${name} />`;
  const tasks = job.tasks ?? [];
  const pending = tasks.filter((t) => t.state === "PENDING" && t.pendingReason);
  const results = tasks.filter((t) => t.resultJson);
  const terminate = async () => {
    if (!confirm(`Terminate ${job.name} and its child jobs?`)) return;
    setBusy("terminating…");
    try {
      await api("TerminateJob", { name: job.name });
      setBusy("");
    } catch (e) {
      setBusy(`terminate failed: ${e.message}`);
    }
  };
  const selected = tasks.find((t) => t.index === metricsTask) ?? tasks[0];
  return html`<section aria-labelledby="h-job">
    <h1 id="h-job" class="wrap">${job.name} <${State} state=${job.state} /></h1>
    <div class="actions">
      <a class="button" href=${href("logs", job.name)}>Logs</a>
      ${TERMINAL.has(job.state) ? null : html`<button onClick=${terminate}>Terminate</button>`} ${busy ? html`<span class="muted">${busy}</span>` : null}
    </div>
    ${job.error ? html`<p class="error" data-testid="job-error">${job.error}</p>` : null}
    <dl class="facts">
      <dt>Submitted</dt>
      <dd>${time(job.submittedAtMs)}</dd>
      <dt>Duration</dt>
      <dd>${jobDuration(job)}</dd>
      <dt>Tasks</dt>
      <dd>${job.numTasks} <${TaskCounts} counts=${job.taskCounts} /></dd>
      <dt>Resources per task</dt>
      <dd>${resourcesText(job.spec)}</dd>
      <dt>Instance</dt>
      <dd class="mono">${job.instanceId}</dd>
      ${
        job.spec?.gang
          ? html`<dt>Gang</dt>
              <dd>yes</dd>`
          : null
      }
    </dl>
    ${
      pending.length
        ? html`<h2>Why tasks wait</h2>
            <ul class="pending">
              ${pending.slice(0, 20).map((t) => html`<li><strong>task ${t.index}</strong>: ${t.pendingReason}</li>`)}
            </ul>`
        : null
    }
    <h2>Tasks</h2>
    <div class="scroll">
      <table>
        <thead>
          <tr>
            <th>#</th>
            <th>State</th>
            <th>Worker</th>
            <th>Status</th>
            <th>Attempts</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          ${tasks.map(
            (t) =>
              html`<tr key=${t.taskId}>
                <td>${t.index}</td>
                <td>
                  <${State}
                    state=${t.state}
                  />${t.failureKind ? html` <span class="failure" data-failure=${t.failureKind}>${t.failureKind}${t.exitCode !== undefined && t.exitCode !== null ? `(${t.exitCode})` : ""}</span>` : null}
                </td>
                <td>${t.workerId || "—"}</td>
                <td class="status">${t.statusText || t.pendingReason || t.error || ""}</td>
                <td><${Attempts} task=${t} /></td>
                <td><a href=${href("logs", job.name, { task: String(t.index) })}>logs</a></td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
    ${
      results.length
        ? html`<h2>Results</h2>
            <div class="scroll">
              <table>
                <thead>
                  <tr>
                    <th>Task</th>
                    <th>Result (JSON)</th>
                  </tr>
                </thead>
                <tbody>
                  ${results.map(
                    (t) =>
                      html`<tr>
                        <td>${t.index}</td>
                        <td><pre class="result">${t.resultJson}</pre></td>
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
        : null
    }
    <h2>Child jobs</h2>
    ${o ? html`<${ChildTree} name=${job.name} jobs=${o.jobs} />` : html`<${Loading} what="child jobs" />`}
    <h2>Training</h2>
    ${
      tasks.length > 1
        ? html`<label
            >Task
            <select value=${String(metricsTask)} onChange=${(e) => setMetricsTask(Number(e.target.value))}>
              ${tasks.map((t) => html`<option value=${String(t.index)}>${t.index}</option>`)}
            </select></label
          >`
        : null
    }
    ${selected ? html`<${TrainingCharts} key=${selected.taskId} taskId=${selected.taskId} />` : html`<p class="muted">No tasks.</p>`}
  </section>`;
}

/** A job's log lines, live: per task and attempt, follow, search, jump to the end. */
export function LogsView({ name, query }) {
  const [lines, setLines] = useState([]);
  const [ended, setEnded] = useState(false);
  const [failure, setFailure] = useState(undefined);
  const [task, setTask] = useState(query.task ?? "");
  const [attempt, setAttempt] = useState(query.attempt ?? "");
  const [search, setSearch] = useState("");
  const [follow, setFollow] = useState(true);
  const box = useRef(null);
  useEffect(() => {
    setLines([]);
    setEnded(false);
    setFailure(undefined);
    const q = new URLSearchParams({ name, ...(task !== "" ? { task } : {}) });
    let buf = [];
    let queued = false;
    // Lines arrive in batches; one render per animation frame, whatever the rate.
    const flush = () => {
      queued = false;
      const add = buf;
      buf = [];
      setLines((old) => {
        const next = old.concat(add);
        return next.length > 20000 ? next.slice(next.length - 20000) : next;
      });
    };
    return subscribe(`/api/stream/logs?${q}`, {
      logs: (b) => {
        buf.push(...b.entries);
        if (!queued) {
          queued = true;
          requestAnimationFrame(flush);
        }
      },
      end: () => setEnded(true),
      failure: setFailure,
    });
  }, [name, task]);
  const shown = useMemo(() => {
    const s = search.toLowerCase();
    return lines.filter((e) => (attempt === "" || String(e.attempt) === attempt) && (!s || e.line.toLowerCase().includes(s)));
  }, [lines, attempt, search]);
  useEffect(() => {
    if (follow && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [shown, follow]);
  const attempts = [...new Set(lines.map((e) => String(e.attempt)))].sort((a, b) => Number(a) - Number(b));
  const tasks = [...new Set(lines.map((e) => String(e.taskIndex)))].sort((a, b) => Number(a) - Number(b));
  const toEnd = () => {
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
    setFollow(true);
  };
  return html`<section aria-labelledby="h-logs">
    <h1 id="h-logs" class="wrap">Logs: <a href=${href("job", name)}>${name}</a></h1>
    <form class="filters" onSubmit=${(e) => e.preventDefault()}>
      <label
        >Task
        <select value=${task} onChange=${(e) => setTask(e.target.value)}>
          <option value="">all</option>
          ${[...new Set([...tasks, task].filter(Boolean))].map((t) => html`<option value=${t}>${t}</option>`)}
        </select></label
      >
      <label
        >Attempt
        <select value=${attempt} onChange=${(e) => setAttempt(e.target.value)}>
          <option value="">all</option>
          ${attempts.map((a) => html`<option value=${a}>${a}</option>`)}
        </select></label
      >
      <label>Search <input type="search" value=${search} onInput=${(e) => setSearch(e.target.value)} placeholder="text in the line" /></label>
      <label class="check"><input type="checkbox" checked=${follow} onChange=${(e) => setFollow(e.target.checked)} /> Follow</label>
      <button type="button" onClick=${toEnd}>Jump to end</button>
    </form>
    <${Failure} failure=${failure} />
    <p class="muted" role="status">${shown.length} of ${lines.length} lines${ended ? " · the job ended" : " · live"}</p>
    <pre
      class="log"
      ref=${box}
      tabindex="0"
      aria-label="log lines"
      onScroll=${(e) => {
        const el = e.currentTarget;
        if (el.scrollHeight - el.scrollTop - el.clientHeight > 40 && follow) setFollow(false);
      }}
    >
${shown.map((e) => html`<div class=${e.stream === "stderr" ? "stderr" : ""} key=${e.seq}><span class="ln">${e.taskIndex}:${e.attempt}</span>${e.line}</div>`)}</pre>
  </section>`;
}

/** Workers: capacity, attributes, what runs there, last heartbeat. */
export function WorkersView() {
  const o = useOverview();
  const [running, setRunning] = useState({});
  useTick(2000);
  // What runs where: the tasks of running jobs, by worker (refreshed as the overview changes).
  const runningJobs = o
    ? o.jobs
        .filter((j) => j.state === "RUNNING" || j.state === "PENDING")
        .map((j) => j.name)
        .slice(0, 100)
    : [];
  const key = runningJobs.join("\n") + (o?.timeMs ?? "");
  useEffect(() => {
    let stop = false;
    Promise.all(runningJobs.map((n) => api("GetJob", { name: n }).catch(() => undefined))).then((jobs) => {
      if (stop) return;
      const by = {};
      for (const j of jobs)
        for (const t of j?.tasks ?? []) if (t.workerId && !TERMINAL.has(t.state) && t.state !== "PENDING") (by[t.workerId] ??= []).push(`${t.taskId}:${t.attempt}`);
      setRunning(by);
    });
    return () => (stop = true);
  }, [key]);
  if (!o) return html`<${Loading} what="workers" />`;
  return html`<section aria-labelledby="h-workers">
    <h1 id="h-workers">Workers</h1>
    ${o.workers.length ? null : html`<p class="muted">No worker registered.</p>`}
    <div class="scroll">
      <table>
        <thead>
          <tr>
            <th>Worker</th>
            <th>State</th>
            <th>CPU used / total</th>
            <th>Memory used / total</th>
            <th>Running</th>
            <th>Last heartbeat</th>
            <th>Attributes</th>
          </tr>
        </thead>
        <tbody>
          ${o.workers.map(
            (w) =>
              html`<tr key=${w.workerId}>
                <td>
                  <div class="mono">${w.workerId}</div>
                  <div class="muted">${w.host}</div>
                </td>
                <td><${State} state=${w.state} /></td>
                <td>${cores(w.used?.cpuMillis)} / ${cores(w.capacity?.cpuMillis)}</td>
                <td>${bytes(w.used?.memoryBytes)} / ${bytes(w.capacity?.memoryBytes)}</td>
                <td>
                  ${w.runningAttempts}${
                    (running[w.workerId] ?? []).length
                      ? html`<ul class="plain">
                          ${running[w.workerId].map((a) => html`<li><a href=${href("job", a.slice(0, a.lastIndexOf("/")))}>${a}</a></li>`)}
                        </ul>`
                      : null
                  }
                </td>
                <td>${ago(w.lastSeenMs)}</td>
                <td>${Object.entries(w.attributes ?? {}).map(([k, v]) => html`<span class="chip">${k}=${v}</span>`)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </section>`;
}

/**
 * Opens a registered service in a new tab on the endpoint proxy's own origin (a capability URL:
 * what the service returns never runs on the dashboard's origin).
 */
async function openEndpoint(event, name) {
  event.preventDefault();
  const tab = window.open("about:blank", "_blank");
  try {
    const url = `${await endpointUrl(name)}/`;
    if (tab) {
      tab.opener = null;
      tab.location.href = url;
    } else window.location.assign(url);
  } catch (e) {
    tab?.close();
    window.alert(`cannot open ${name}: ${e.message}`);
  }
}

/** Registered endpoints, with links through the controller's proxy and to the playground. */
export function EndpointsView() {
  const o = useOverview();
  if (!o) return html`<${Loading} what="endpoints" />`;
  return html`<section aria-labelledby="h-endpoints">
    <h1 id="h-endpoints">Endpoints</h1>
    ${o.endpoints.length ? null : html`<p class="muted">No endpoint registered.</p>`}
    <div class="scroll">
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Address</th>
            <th>Registered by</th>
            <th>Open</th>
          </tr>
        </thead>
        <tbody>
          ${o.endpoints.map(
            (e) =>
              html`<tr key=${e.endpointId}>
                <td class="mono">${e.name}</td>
                <td class="mono">${e.address}</td>
                <td>${e.attemptId ? html`<a href=${href("job", e.attemptId.replace(/\/\d+:\d+$/, ""))}>${e.attemptId}</a>` : "—"}</td>
                <td>
                  <a href="#" data-endpoint=${e.name} onClick=${(ev) => openEndpoint(ev, e.name)}>via proxy</a
                  >${/(^|\/)serve\//.test(e.name) ? html` · <a href=${href("playground", e.name)}>playground</a>` : null}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </section>`;
}
