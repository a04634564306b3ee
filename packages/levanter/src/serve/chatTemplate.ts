// Chat templates: the built-in one for byte-level models and a tokenizer's own Jinja template from tokenizer_config.json.
import { Template } from "@huggingface/jinja";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { LevanterError } from "../errors.ts";

/** One chat message (content already flattened to text). */
export interface ChatMessage {
  role: string;
  content: string;
}

/** Renders messages into the prompt text, ending where the assistant's reply starts. */
export interface ChatTemplate {
  /** `"builtin"` or `"tokenizer_config.json"`. */
  readonly source: string;
  render(messages: ChatMessage[]): string;
  /** Stop strings added to every chat request (the start of the next turn). */
  readonly stop: string[];
}

/**
 * The built-in template for byte-level models: each message as `<|role|>\n{content}\n`, then
 * `<|assistant|>\n`; generation stops at `\n<|` (the next turn's marker).
 */
export const BUILTIN_CHAT_TEMPLATE: ChatTemplate = {
  source: "builtin",
  render: (messages) => `${messages.map((m) => `<|${m.role}|>\n${m.content}\n`).join("")}<|assistant|>\n`,
  stop: ["\n<|"],
};

/**
 * The chat template of the tokenizer whose `tokenizer.json` is given: the `chat_template` of the
 * `tokenizer_config.json` beside it (a string, or the entry named `default` of a list), rendered
 * with `add_generation_prompt: true`; the built-in template when there is none.
 */
export async function loadChatTemplate(tokenizerJson: string | undefined): Promise<ChatTemplate> {
  if (!tokenizerJson) return BUILTIN_CHAT_TEMPLATE;
  const file = path.join(path.dirname(tokenizerJson), "tokenizer_config.json");
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return BUILTIN_CHAT_TEMPLATE;
    throw new LevanterError("DATA", `${file}: not readable JSON`, { cause: e });
  }
  let source = config.chat_template;
  if (Array.isArray(source)) source = (source as { name?: string; template?: string }[]).find((t) => t.name === "default")?.template;
  if (typeof source !== "string") return BUILTIN_CHAT_TEMPLATE;
  const template = new Template(source);
  const token = (v: unknown) => (typeof v === "string" ? v : typeof v === "object" && v && "content" in v ? String((v as { content: unknown }).content) : "");
  return {
    source: "tokenizer_config.json",
    render: (messages) => template.render({ messages, add_generation_prompt: true, bos_token: token(config.bos_token), eos_token: token(config.eos_token) }),
    stop: [],
  };
}
