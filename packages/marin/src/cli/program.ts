// The `marin` command line (commander): run, plan, explain, status; the CLI's only link to the executor.
import path from "node:path";
import { Command, CommanderError, Option } from "commander";
import { MarinError } from "../errors.ts";
import { explainStep, formatExplanation } from "../executor/explain.ts";
import { formatPlan, planRun } from "../executor/plan.ts";
import { listPrefix } from "../executor/prefixStatus.ts";
import { newRunId, runGraph } from "../executor/runner.ts";
import type { RunSummary, StepLauncher } from "../executor/runner.ts";
import { loadExperiment } from "../experiment/experiment.ts";
import { resolveGraph } from "../step/graph.ts";
import { lookupToken } from "@marin/iris/client";
import { integerArg } from "@marin/iris/toolkit";
import { PipelineReporter } from "./dashboardReport.ts";
import { formatSummary, LiveView } from "./liveView.ts";
import { resolveCliPath } from "./paths.ts";
import { formatRuns, printLog } from "./runsAndLogs.ts";

/** The prefix a command uses: `--prefix`, else MARIN_PREFIX, else `./marin-out` (relative to where the command was run). */
export function resolvePrefix(flag: string | undefined): string {
  return resolveCliPath(flag ?? process.env.MARIN_PREFIX ?? "marin-out");
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

// InvalidArgumentError: commander prints it (with the option's name) before exiting.
const positiveInt = integerArg({ min: 1, expected: "a positive integer" });

interface SelectFlags {
  prefix?: string;
  only?: string[];
  force?: string[];
}

async function loadGraph(script: string, flags: SelectFlags) {
  const loaded = await loadExperiment(resolveCliPath(script));
  return { script: loaded.script, graph: resolveGraph(loaded.steps, resolvePrefix(flags.prefix)) };
}

/** Makes the launcher for steps with resources: iris, embedded LocalCluster unless `cluster` is given (with `httpPort`: serving the dashboard). */
async function irisLauncherFor(
  script: string,
  prefix: string,
  cluster: string | undefined,
  runId: string,
  httpPort?: number,
): Promise<StepLauncher & { dashboardUrl?: string; loginUrl?: string; token?: string }> {
  const { createIrisLauncher } = await import("../remote/irisLauncher.ts");
  // The dashboard's cluster starts before the run knows whether it runs anything: its database is
  // temporary (a run that only skips steps leaves no run folder).
  const stateDir = httpPort === undefined ? path.join(prefix, ".marin", "runs", runId) : undefined;
  return createIrisLauncher({ script, prefix, cluster, stateDir, ...(httpPort !== undefined ? { httpPort } : {}) });
}

/** The `marin` command line (commander), writing to the given streams. */
export function buildProgram(io: { out: (s: string) => void; setExitCode: (c: number) => void }): Command {
  const program = new Command("marin")
    .description("Run experiment scripts: steps that run once, in dependency order, and are never redone when finished.")
    .showHelpAfterError()
    .exitOverride();
  const selectOptions = (c: Command) =>
    c
      .option("--prefix <dir>", "where outputs live (default: $MARIN_PREFIX or ./marin-out)")
      .option("--only <regex>", "run only steps whose name matches (and what they need); repeatable", collect)
      .option("--force <regex>", "rerun matching steps even if they succeeded; repeatable", collect);

  selectOptions(program.command("run").argument("<script>", "experiment script (default-exports a function returning steps)"))
    .description("run an experiment: what is not finished runs, the rest is skipped")
    .option("--dry-run", "print the plan (run/skip/why); write nothing, start nothing")
    .addOption(new Option("--max-concurrent <n>", "steps running at once").argParser(positiveInt).default(4))
    .option("--cluster <addr>", "run steps with resources on this iris controller (default: an embedded local cluster)")
    .option("-v, --verbose", "show step log lines in the live view")
    .option("--dashboard <url>", "report the run's DAG to this iris dashboard (the controller's http:// URL; with --cluster); default: the embedded cluster serves one")
    .option("--no-dashboard", "no dashboard: the embedded cluster starts only when a step needs it, and the run is reported nowhere")
    .action(async (script: string, flags: SelectFlags & { dryRun?: boolean; maxConcurrent: number; cluster?: string; verbose?: boolean; dashboard: string | boolean }) => {
      const { script: abs, graph } = await loadGraph(script, flags);
      if (flags.dryRun) {
        const plan = await planRun(graph, flags);
        io.out(formatPlan(plan).join("\n"));
        return;
      }
      // The dashboard: the embedded cluster starts at once (on a free HTTP port) and its URL is the
      // first line; with --cluster, --dashboard <url> names that controller's dashboard.
      const runId = newRunId(Date.now());
      let launcher: Promise<StepLauncher & { dashboardUrl?: string; loginUrl?: string; token?: string }> | undefined;
      let reporter: PipelineReporter | undefined;
      if (flags.dashboard !== false && !flags.cluster) {
        launcher = irisLauncherFor(abs, graph.prefix, undefined, runId, 0);
        const started = await launcher;
        const url = started.dashboardUrl;
        if (url) {
          // The printed URL carries a one-time login code: it signs one browser in, once.
          process.stderr.write(`marin: dashboard at ${started.loginUrl ?? url}#/pipelines/${encodeURIComponent(runId)}\n`);
          reporter = new PipelineReporter(url, runId, graph.prefix, started.token);
        }
      } else if (typeof flags.dashboard === "string") {
        // The token: IRIS_AUTH_TOKEN, else the one a local controller at that address recorded for this user.
        reporter = new PipelineReporter(flags.dashboard, runId, graph.prefix, process.env.IRIS_AUTH_TOKEN || lookupToken(flags.dashboard));
      }
      const view = new LiveView(process.stderr, { verbose: flags.verbose });
      const controller = new AbortController();
      const onSignal = () => controller.abort();
      process.once("SIGINT", onSignal);
      process.once("SIGTERM", onSignal);
      let summary: RunSummary | undefined;
      try {
        summary = await runGraph(graph, {
          only: flags.only,
          force: flags.force,
          maxConcurrent: flags.maxConcurrent,
          signal: controller.signal,
          runId,
          onEvent: (e) => {
            view.handle(e);
            reporter?.handle(e);
          },
          remoteLauncher: (id) => (launcher ??= irisLauncherFor(abs, graph.prefix, flags.cluster, id)),
        });
        view.stop();
        io.out(formatSummary(summary).join("\n"));
        if (!summary.ok) io.setExitCode(1);
      } finally {
        await reporter?.finish(summary);
        // The runner closes a launcher it used; one started only for the dashboard closes here.
        await (await launcher?.catch(() => undefined))?.close();
        view.stop();
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
      }
    });

  selectOptions(program.command("plan").argument("<script>", "experiment script"))
    .description("print what `run` would do and why; writes nothing")
    .action(async (script: string, flags: SelectFlags) => {
      const { graph } = await loadGraph(script, flags);
      io.out(formatPlan(await planRun(graph, flags)).join("\n"));
    });

  program
    .command("explain")
    .argument("<script>", "experiment script")
    .argument("<step>", "step name")
    .option("--prefix <dir>", "where outputs live (default: $MARIN_PREFIX or ./marin-out)")
    .description("say whether a step would run and why; for a changed config, the changed fields (old → new)")
    .action(async (script: string, step: string, flags: { prefix?: string }) => {
      const { graph } = await loadGraph(script, flags);
      io.out(formatExplanation(await explainStep(graph, step)).join("\n"));
    });

  program
    .command("status")
    .option("--prefix <dir>", "where outputs live (default: $MARIN_PREFIX or ./marin-out)")
    .description("list the step outputs under a prefix with their state")
    .action(async (flags: { prefix?: string }) => {
      const prefix = resolvePrefix(flags.prefix);
      const entries = await listPrefix(prefix);
      if (entries.length === 0) {
        io.out(`no step outputs under ${prefix}`);
        return;
      }
      const width = Math.max(...entries.map((e) => e.id.length));
      for (const e of entries) {
        const s = e.status;
        const took = s.startedAt && s.finishedAt ? ` ${((s.finishedAt - s.startedAt) / 1000).toFixed(1)}s` : "";
        const when = new Date(s.finishedAt ?? s.updatedAt).toISOString();
        const state = e.publishPending ? `${s.state} (publish pending: the next run completes it)` : s.state === "RUNNING" && !e.leaseLive ? "RUNNING (stale lease)" : s.state;
        io.out(`${e.id.padEnd(width)}  ${state.padEnd(10)} ${when}${took}${s.error ? `  ${s.error.split("\n")[0]}` : ""}`);
      }
    });
  program
    .command("serve")
    .argument("<script>", "experiment script")
    .argument("<step>", "a training step (its newest checkpoint is served)")
    .option("--prefix <dir>", "where outputs live (default: $MARIN_PREFIX or ./marin-out)")
    .option("--cluster <addr>", "serve on this iris controller (default: an embedded local cluster)")
    .addOption(new Option("--replicas <n>", "server instances").argParser(positiveInt).default(1))
    .addOption(new Option("--http-port <port>", "the embedded controller's HTTP port (proxy, capability URLs; default: any free port)").argParser(positiveInt))
    .addOption(new Option("--ttl <seconds>", "capability URL lifetime (default 3600; 60..86400)").argParser(positiveInt))
    .addOption(new Option("--startup-timeout <seconds>", "how long the server may take to be ready (default 300)").argParser(positiveInt))
    .description("serve a step's newest checkpoint over an OpenAI-compatible API (an iris job); prints the URL, a capability URL and a curl example; Ctrl-C stops it (exit 0)")
    .action(async (script: string, step: string, flags: { prefix?: string; cluster?: string; replicas: number; httpPort?: number; ttl?: number; startupTimeout?: number }) => {
      const { graph } = await loadGraph(script, flags);
      const { serveStep } = await import("./serveCommand.ts");
      io.setExitCode(
        await serveStep({
          graph,
          step,
          cluster: flags.cluster,
          replicas: flags.replicas,
          httpPort: flags.httpPort ?? 0,
          ttlSeconds: flags.ttl,
          startupTimeoutMs: flags.startupTimeout === undefined ? undefined : flags.startupTimeout * 1000,
          out: io.out,
        }),
      );
    });

  program
    .command("runs")
    .option("--prefix <dir>", "where outputs live (default: $MARIN_PREFIX or ./marin-out)")
    .description("list the runs at a prefix: id, start, state, steps ran/skipped/failed/cancelled")
    .action(async (flags: { prefix?: string }) => {
      io.out((await formatRuns(resolvePrefix(flags.prefix))).join("\n"));
    });

  program
    .command("logs")
    .argument("<step>", "step name")
    .option("--prefix <dir>", "where outputs live (default: $MARIN_PREFIX or ./marin-out)")
    .option("--run <id>", "the run to read (default: the newest run with a log of that step)")
    .option("-f, --follow", "keep printing while the run is going")
    .description("print a step's log (steps run in-process and as iris jobs alike) from the newest run that has one")
    .action(async (step: string, flags: { prefix?: string; run?: string; follow?: boolean }) => {
      await printLog(resolvePrefix(flags.prefix), step, { follow: flags.follow, runId: flags.run, out: (c) => process.stdout.write(c) });
    });
  return program;
}

/** Runs the CLI with `args` (without `node` and the script); resolves with the exit code. */
export async function runCli(args: string[]): Promise<number> {
  let code = 0;
  const program = buildProgram({ out: (s) => process.stdout.write(`${s}\n`), setExitCode: (c) => (code = c) });
  try {
    await program.parseAsync(args, { from: "user" });
    return code;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    if (e instanceof MarinError) {
      process.stderr.write(`marin: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
