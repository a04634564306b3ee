// Test fixture: module entrypoints that use the context API from inside real iris tasks.
import net from "node:net";
import { irisCtx } from "../../context.ts";

/** Task 0 serves on its named port and registers it; task 1 resolves it, calls it, and submits a child. */
export async function rendezvous(args: { endpoint: string }): Promise<void> {
  const ctx = irisCtx();
  if (ctx.taskIndex === 0) {
    const port = ctx.getPort("coord");
    let served!: () => void;
    const done = new Promise<void>((resolve) => (served = resolve));
    const server = net.createServer((socket) => {
      socket.end(`hello from task ${ctx.taskIndex} of ${ctx.numTasks}`);
      served();
    });
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    const reg = await ctx.registry.register(args.endpoint, `${ctx.advertiseHost}:${port}`, { rank: "0" });
    console.log(`registered ${reg.name}`);
    await ctx.reportStatus("serving", { step: 1, loss: 0.5 });
    await ctx.reportStatus("still serving", { step: 2, loss: 0.25 });
    await done;
    server.close();
    return;
  }
  const ep = await ctx.resolver.resolve(args.endpoint, { timeoutMs: 60_000 });
  const reply = await new Promise<string>((resolve, reject) => {
    const [host, port] = ep.address.split(":");
    const socket = net.connect(Number(port), host);
    let data = "";
    socket.on("data", (d) => (data += String(d)));
    socket.on("end", () => resolve(data));
    socket.on("error", reject);
  });
  console.log(`reply: ${reply} (rank ${ep.metadata.rank})`);
  const child = await ctx.submitChild({
    name: "kid",
    entrypoint: { command: ["sh", "-c", "echo child $IRIS_JOB_ID $TEAM $ROLE"] },
    env: { ROLE: "kid" },
    resources: { cpuMillis: 100 },
  });
  const status = await child.wait({ timeoutMs: 60_000 });
  console.log(`child ${child.name} ${status.state}`);
}

/** Fails the way user code fails. */
export async function explode(): Promise<void> {
  await Promise.resolve();
  throw new TypeError(`exploded in ${irisCtx().taskId}`);
}
