// `levanter export gguf --checkpoint CKPT --out FILE.gguf [--type f32|f16|q8_0]`: a Llama-shaped
// checkpoint and its tokenizer → one GGUF v3 file (the writer is models/gguf.ts).
import { readFile } from "node:fs/promises";
import path from "node:path";
import { byteGgufTokenizer, checkGgufLlama, fail, FILE_TYPE, ggufLlama, hfGgufTokenizer, writeGguf, type GgufFileType, type GgufTokenizer } from "../models/gguf.ts";
import { checkpointTokenizerFile, readTrainCheckpoint, resolveCheckpointDir } from "./trainState.ts";

/** What {@link exportGguf} wrote. */
export interface ExportGgufResult {
  out: string;
  checkpoint: string;
  type: GgufFileType;
  tensors: number;
  bytes: number;
}

/** `levanter export gguf --checkpoint CKPT --out FILE.gguf [--type f32|f16|q8_0]`. */
export async function exportGguf(checkpoint: string, out: string, opts: { type?: GgufFileType; tokenizerJson?: string } = {}): Promise<ExportGgufResult> {
  const type = opts.type ?? "f32";
  if (!(type in FILE_TYPE)) throw fail(`--type: ${JSON.stringify(type)} is not one of f32, f16, q8_0`);
  const ckptDir = await resolveCheckpointDir(checkpoint);
  const ckpt = await readTrainCheckpoint(ckptDir);
  checkGgufLlama(ckpt.modelConfig);
  const name = ckpt.state.tokenizer;
  let tok: GgufTokenizer;
  if (name === "byte" && !opts.tokenizerJson) tok = byteGgufTokenizer();
  else {
    const file = opts.tokenizerJson ?? (await checkpointTokenizerFile(ckptDir));
    if (!file) throw fail(`--tokenizer: required, ${ckptDir} names tokenizer "${name}" but carries no tokenizer.json`);
    const read = async (f: string) => JSON.parse(await readFile(f, "utf8")) as unknown;
    const configFile = path.join(path.dirname(file), "tokenizer_config.json");
    const tokenizerConfig = (await read(configFile).catch(() => ({}))) as Record<string, unknown>;
    tok = hfGgufTokenizer(name, await read(file), tokenizerConfig, file);
  }
  const { metadata, tensors } = ggufLlama(ckpt.modelConfig, ckpt.params, tok, { type, name: path.basename(out, ".gguf") || "levanter" });
  const { bytes } = await writeGguf(out, metadata, tensors);
  return { out, checkpoint: ckptDir, type, tensors: tensors.length, bytes };
}
