// Chat templates: the built-in byte-level one, and a tokenizer_config.json's own Jinja template.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BUILTIN_CHAT_TEMPLATE, loadChatTemplate } from "./chatTemplate.ts";

describe("chat templates", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "lev-chat-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const messages = [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hi" },
  ];

  it("renders the built-in template, also when no tokenizer or no chat_template is given", async () => {
    expect(BUILTIN_CHAT_TEMPLATE.render(messages)).toBe("<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n");
    expect(await loadChatTemplate(undefined)).toBe(BUILTIN_CHAT_TEMPLATE);
    expect(await loadChatTemplate(path.join(dir, "absent", "tokenizer.json"))).toBe(BUILTIN_CHAT_TEMPLATE);
  });

  it("uses tokenizer_config.json's chat_template with the generation prompt and special tokens", async () => {
    writeFileSync(
      path.join(dir, "tokenizer_config.json"),
      JSON.stringify({
        bos_token: "<s>",
        eos_token: { content: "</s>" },
        chat_template: "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}",
      }),
    );
    const t = await loadChatTemplate(path.join(dir, "tokenizer.json"));
    expect(t.source).toBe("tokenizer_config.json");
    expect(t.render(messages)).toBe("<s>[system] Be brief.</s>[user] Hi</s>[assistant] ");
  });
});
