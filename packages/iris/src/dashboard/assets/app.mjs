// The dashboard's entry module: the hash router, the navigation bar and the sign-out button.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { html } from "./lib.mjs";
import { EndpointsView, JobsView, JobView, LogsView, OverviewView, WorkersView } from "./views.mjs";
import { PipelinesView } from "./pipelines.mjs";
import { ClusterView } from "./cluster.mjs";
import { PlaygroundView } from "./playground.mjs";

/** The route of a hash: `#/job/%2Fa%2Fb?x=1` → { view: "job", arg: "/a/b", query }. */
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [pathPart, q = ""] = raw.split("?");
  const [view = "", arg] = pathPart.split("/");
  return { view: view || "overview", arg: arg === undefined ? undefined : decodeURIComponent(arg), query: Object.fromEntries(new URLSearchParams(q)) };
}

const NAV = [
  ["overview", "Overview"],
  ["jobs", "Jobs"],
  ["workers", "Workers"],
  ["cluster", "Cluster"],
  ["endpoints", "Endpoints"],
  ["pipelines", "Pipelines"],
];

function App() {
  const [route, setRoute] = useState(parseHash());
  useEffect(() => {
    const on = () => setRoute(parseHash());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  useEffect(() => {
    document.getElementById("main")?.focus({ preventScroll: true });
  }, [route.view, route.arg]);
  const auth = document.body.dataset.auth === "on";
  const active = route.view === "job" || route.view === "logs" ? "jobs" : route.view === "playground" ? "endpoints" : route.view;
  let view;
  switch (route.view) {
    case "jobs":
      view = html`<${JobsView} query=${route.query} />`;
      break;
    case "job":
      view = html`<${JobView} name=${route.arg} query=${route.query} />`;
      break;
    case "logs":
      view = html`<${LogsView} name=${route.arg} query=${route.query} />`;
      break;
    case "workers":
      view = html`<${WorkersView} />`;
      break;
    case "cluster":
      view = html`<${ClusterView} />`;
      break;
    case "endpoints":
      view = html`<${EndpointsView} />`;
      break;
    case "pipelines":
      view = html`<${PipelinesView} runId=${route.arg} query=${route.query} />`;
      break;
    case "playground":
      view = html`<${PlaygroundView} endpoint=${route.arg} />`;
      break;
    default:
      view = html`<${OverviewView} />`;
  }
  return html`
    <a
      class="skip"
      href="#main"
      onClick=${(e) => {
        e.preventDefault();
        document.getElementById("main")?.focus();
      }}
      >Skip to content</a
    >
    <header class="top">
      <a class="brand" href="#/">iris</a>
      <nav aria-label="Views">
        ${NAV.map(([v, label]) => html`<a href=${`#/${v}`} class=${active === v ? "active" : ""} aria-current=${active === v ? "page" : undefined}>${label}</a>`)}
      </nav>
      ${auth ? html`<form method="post" action="/logout" class="logout"><button type="submit">Sign out</button></form>` : null}
    </header>
    <main id="main" tabindex="-1">${view}</main>
  `;
}

const mount = document.getElementById("app");
mount.textContent = "";
render(html`<${App} />`, mount);
