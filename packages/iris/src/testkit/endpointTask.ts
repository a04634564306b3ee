// A task program for endpoint tests (run as `node --import <SOURCE_LOADER> endpointTask.ts MODE`):
// "serve" registers endpoint "svc" leased to its attempt and stays up; "resolve" resolves "svc"
// (scoped to its root job) with backoff and prints the address.
import { IrisClient } from "../client/irisClient.ts";

const env = process.env;
const client = IrisClient.connect(env.IRIS_CONTROLLER_ADDRESS!, { token: env.IRIS_AUTH_TOKEN, scopeJob: env.IRIS_JOB_ID });
if (process.argv[2] === "serve") {
  const ep = await client.registerEndpoint("svc", `127.0.0.1:${env.IRIS_PORT_HTTP ?? "1"}`, {
    attemptId: `${env.IRIS_TASK_ID}:${env.IRIS_ATTEMPT}`,
    metadata: { role: "server" },
  });
  console.log(`registered ${ep.name}`);
  setInterval(() => undefined, 60_000);
} else {
  const ep = await client.resolveEndpoint("svc", { timeoutMs: 90_000 });
  console.log(`resolved ${ep.name} ${ep.address} ${ep.metadata.role}`);
  client.close();
}
