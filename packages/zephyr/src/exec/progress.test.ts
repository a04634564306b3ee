// StageProgress: per-stage progress bars drawn on a stream, and silence when off.
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { fromList } from "../index.ts";
import { StageProgress } from "./progress.ts";

/** A stream that says it is a terminal, collecting what is drawn on it. */
function fakeTty(): { stream: NodeJS.WritableStream; text: () => string } {
  const stream = Object.assign(new PassThrough(), { isTTY: true, columns: 120 });
  let out = "";
  stream.on("data", (d: Buffer) => (out += d.toString()));
  return { stream, text: () => out };
}

describe("StageProgress", () => {
  it("draws one bar per stage on a terminal, counting finished shards", () => {
    const stages = fromList([1, 2, 3, 4], { shards: 3 })
      .map((x) => x + 1)
      .deduplicate((x) => x % 2)
      .plan().stages;
    const tty = fakeTty();
    const progress = new StageProgress(true, tty.stream);
    const first = progress.stage(stages[0], 3);
    first.advance(1);
    first.advance(2);
    first.done();
    const second = progress.stage(stages[1], 2);
    second.advance(1);
    progress.stop();
    const text = tty.text();
    expect(text).toContain(`3/3 shards | stage 0: ${stages[0].name}`);
    expect(text).toContain(`1/2 shards | stage 1: ${stages[1].name}`);
  });

  it("draws nothing when disabled", () => {
    const tty = fakeTty();
    const progress = new StageProgress(false, tty.stream);
    const bar = progress.stage(fromList([1]).plan().stages[0], 1);
    bar.advance(1);
    bar.done();
    progress.stop();
    expect(tty.text()).toBe("");
  });
});
