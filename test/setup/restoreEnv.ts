// Setup file of every test project (vitest.workspace.ts). Test files share their worker processes
// (`isolate: false`): what one file sets in process.env must not reach the next file, or the
// processes that file starts (a LEVANTER_LOG=warn left behind silences a later file's ranks).
// Each file starts from the environment the worker had before it and leaves nothing behind.
import { afterAll } from "vitest";

const before = { ...process.env };

afterAll(() => {
  for (const k of Object.keys(process.env)) if (!(k in before)) delete process.env[k];
  for (const [k, v] of Object.entries(before)) if (process.env[k] !== v) process.env[k] = v;
});
