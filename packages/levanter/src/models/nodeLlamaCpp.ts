// node-llama-cpp (pinned 3.21.1, its prebuilt Linux CPU binary) for the GGUF end-to-end test and the
// serve benchmark's llama.cpp peer. Its platform packages weigh hundreds of MB, so it is installed
// once into a scratch project under the OS temp folder (reused by later runs), never into the workspace.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const NODE_LLAMA_CPP_VERSION = "3.21.1";
const PROJECT = path.join(os.tmpdir(), `levanter-node-llama-cpp-${NODE_LLAMA_CPP_VERSION}`);
const ENTRY = path.join(PROJECT, "node_modules", "node-llama-cpp", "dist", "index.js");

/** Installs node-llama-cpp@3.21.1 into the scratch project unless it is there; the reason when it cannot. */
export function installNodeLlamaCpp(): string | undefined {
  const pkg = path.join(PROJECT, "node_modules", "node-llama-cpp", "package.json");
  if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, "utf8")) as { version: string }).version === NODE_LLAMA_CPP_VERSION) return undefined;
  mkdirSync(PROJECT, { recursive: true });
  if (!existsSync(path.join(PROJECT, "package.json"))) writeFileSync(path.join(PROJECT, "package.json"), JSON.stringify({ name: "levanter-gguf-check", private: true }));
  const env = { ...process.env, NODE_OPTIONS: "", npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };
  const r = spawnSync("npm", ["install", "--no-audit", "--no-fund", "-E", `node-llama-cpp@${NODE_LLAMA_CPP_VERSION}`], { cwd: PROJECT, env, encoding: "utf8", timeout: 900_000 });
  if (r.status !== 0 || !existsSync(ENTRY))
    return `npm install node-llama-cpp@${NODE_LLAMA_CPP_VERSION} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr ?? "").slice(-400)}`;
  return undefined;
}

/** A sequence of a context: greedy or sampled evaluation, token by token. */
export interface LlamaSequence {
  evaluate(tokens: number[], opts: { temperature: number }): AsyncGenerator<number>;
  /** Forgets the evaluated tokens (the KV cache), so the next evaluation starts afresh. */
  clearHistory(): Promise<void>;
  dispose(): void;
}

/** Just what the test and the benchmark use of node-llama-cpp's API. */
export interface NodeLlamaCpp {
  getLlama(opts: { gpu: false; build: "never"; logLevel?: string }): Promise<{
    loadModel(opts: { modelPath: string }): Promise<{
      tokenize(text: string, specialTokens?: boolean): number[];
      detokenize(tokens: readonly number[]): string;
      tokens: { eos: number | null };
      createContext(opts: { contextSize: number; threads?: number; sequences?: number; batchSize?: number }): Promise<{
        getSequence(): LlamaSequence;
        dispose(): Promise<void>;
      }>;
      dispose(): Promise<void>;
    }>;
    dispose(): Promise<void>;
  }>;
}

/** Loads the installed package (call {@link installNodeLlamaCpp} first). */
export async function importNodeLlamaCpp(): Promise<NodeLlamaCpp> {
  return (await import(pathToFileURL(ENTRY).href)) as NodeLlamaCpp;
}
