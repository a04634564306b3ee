// The model playground: completions and chat against a served model (an endpoint of the inference
// service) through the controller's endpoint proxy on its own origin (a capability URL), streamed (SSE), with sampling controls and a stop button.
import { useRef, useState } from "preact/hooks";
import { endpointUrl, html } from "./lib.mjs";

/**
 * POSTs an OpenAI-style request with `stream: true` and hands each `data:` JSON chunk to `onChunk`
 * until `[DONE]`, the end, or `signal` aborts.
 */
async function streamSse(url, body, signal, onChunk) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal,
    credentials: "omit",
  });
  if (!res.ok || !res.body) {
    const text = await res.text().catch(() => "");
    let message = text;
    try {
      message = JSON.parse(text).error?.message ?? JSON.parse(text).message ?? text;
    } catch {
      // not JSON: the text as it is
    }
    throw new Error(`${res.status} ${message}`.trim());
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") return;
        onChunk(JSON.parse(data));
      }
    }
  }
}

function Num({ label, value, set, min, max, step }) {
  return html`<label>${label} <input type="number" value=${value} min=${min} max=${max} step=${step} onInput=${(e) => set(e.target.value)} /></label>`;
}

/** Completion and chat for one served endpoint. */
export function PlaygroundView({ endpoint }) {
  const [mode, setMode] = useState("completion");
  const [prompt, setPrompt] = useState("The meaning of life is");
  const [messages, setMessages] = useState([]);
  const [draft, setDraft] = useState("");
  const [output, setOutput] = useState("");
  const [temperature, setTemperature] = useState("0.8");
  const [topK, setTopK] = useState("40");
  const [topP, setTopP] = useState("1");
  const [maxTokens, setMaxTokens] = useState("64");
  const [running, setRunning] = useState(false);
  const [error, setError] = useState("");
  const abort = useRef(null);
  if (!endpoint) return html`<p class="muted">Open the playground from the Endpoints view (an endpoint named <code>serve/…</code>).</p>`;
  const sampling = () => ({
    temperature: Number(temperature),
    ...(topK !== "" && Number(topK) > 0 ? { top_k: Math.floor(Number(topK)) } : {}),
    top_p: Number(topP),
    max_tokens: Math.floor(Number(maxTokens)),
    stream: true,
  });
  const run = async () => {
    setError("");
    setRunning(true);
    const ctl = new AbortController();
    abort.current = ctl;
    try {
      if (mode === "completion") {
        setOutput("");
        await streamSse(`${await endpointUrl(endpoint)}/v1/completions`, { prompt, ...sampling() }, ctl.signal, (c) => setOutput((o) => o + (c.choices?.[0]?.text ?? "")));
      } else {
        const history = [...messages, { role: "user", content: draft }];
        setMessages([...history, { role: "assistant", content: "" }]);
        setDraft("");
        await streamSse(`${await endpointUrl(endpoint)}/v1/chat/completions`, { messages: history, ...sampling() }, ctl.signal, (c) => {
          const piece = c.choices?.[0]?.delta?.content ?? "";
          if (piece) setMessages((m) => [...m.slice(0, -1), { role: "assistant", content: m[m.length - 1].content + piece }]);
        });
      }
    } catch (e) {
      if (e.name !== "AbortError") setError(String(e.message ?? e));
    } finally {
      setRunning(false);
      abort.current = null;
    }
  };
  return html`<section aria-labelledby="h-play">
    <h1 id="h-play" class="wrap">Playground: <span class="mono">${endpoint}</span></h1>
    <div role="tablist" class="tabs">
      ${["completion", "chat"].map((m) => html`<button role="tab" aria-selected=${mode === m} class=${mode === m ? "active" : ""} onClick=${() => setMode(m)}>${m === "completion" ? "Completion" : "Chat"}</button>`)}
    </div>
    <form
      class="filters"
      onSubmit=${(e) => {
        e.preventDefault();
        if (!running) void run();
      }}
    >
      <${Num} label="Temperature" value=${temperature} set=${setTemperature} min="0" max="2" step="0.1" />
      <${Num} label="Top-k" value=${topK} set=${setTopK} min="0" step="1" />
      <${Num} label="Top-p" value=${topP} set=${setTopP} min="0.01" max="1" step="0.05" />
      <${Num} label="Max tokens" value=${maxTokens} set=${setMaxTokens} min="1" step="1" />
    </form>
    ${
      mode === "completion"
        ? html`<label class="block">Prompt <textarea rows="4" value=${prompt} onInput=${(e) => setPrompt(e.target.value)}></textarea></label>
            <div class="actions">
              <button onClick=${run} disabled=${running}>Generate</button><button onClick=${() => abort.current?.abort()} disabled=${!running}>Stop</button>
            </div>
            <pre class="completion" data-testid="completion" aria-live="polite"><strong>${prompt}</strong>${output}</pre>`
        : html`<div class="chat" aria-live="polite">${messages.map((m) => html`<div class=${`msg ${m.role}`}><strong>${m.role}</strong> ${m.content}</div>`)}</div>
            <label class="block">Message <textarea rows="2" value=${draft} onInput=${(e) => setDraft(e.target.value)}></textarea></label>
            <div class="actions">
              <button onClick=${run} disabled=${running || !draft}>Send</button><button onClick=${() => abort.current?.abort()} disabled=${!running}>Stop</button
              ><button onClick=${() => setMessages([])} disabled=${running}>Clear</button>
            </div>`
    }
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
  </section>`;
}
