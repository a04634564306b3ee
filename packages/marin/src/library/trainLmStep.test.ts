// trainLmStep's config checks, and its light schema kept in step with levanter's.
import path from "node:path";
import { ModelConfigSchema, OptimizerConfigSchema, TrainerConfigSchema } from "@marin/levanter";
import { describe, expect, it } from "vitest";
import { MarinError } from "../errors.ts";
import { resolveGraph } from "../step/graph.ts";
import { defineStep, outputOf } from "../step/step.ts";
import { trainLmStep, trainLmStepConfigSchema } from "./trainLmStep.ts";

const data = defineStep({ name: "tokenize", config: {}, fn: () => undefined });
const prefix = path.join("/tmp", "marin-trainlm-never-written");

function resolveError(opts: Partial<Parameters<typeof trainLmStep>[0]>): string {
  try {
    // The factory checks the option keys; the graph the values.
    resolveGraph([trainLmStep({ data: outputOf(data), model: { dModel: 32, nHeads: 4 }, trainer: { numTrainSteps: 10 }, ...opts })], prefix);
  } catch (e) {
    expect(e).toBeInstanceOf(MarinError);
    expect((e as MarinError).code).toBe("INVALID_CONFIG");
    return (e as Error).message;
  }
  throw new Error("expected the graph to be refused");
}

describe("trainLmStep config", () => {
  it("accepts a valid config", () => {
    const g = resolveGraph(
      [trainLmStep({ data: outputOf(data), model: { dModel: 32, nHeads: 4 }, optimizer: { learningRate: 1e-3 }, trainer: { numTrainSteps: 10, batchSize: 8, microBatchSize: 4 } })],
      prefix,
    );
    expect(g.byName.get("train")!.config).toMatchObject({ trainer: { numTrainSteps: 10, batchSize: 8 } });
  });

  it("sizes levanter's matMul threads to the cores it asks for, without changing the step's version", () => {
    const make = (cpuMillis?: number) =>
      resolveGraph(
        [trainLmStep({ data: outputOf(data), model: { dModel: 32, nHeads: 4 }, trainer: { numTrainSteps: 10 }, ...(cpuMillis ? { resources: { cpuMillis } } : {}) })],
        prefix,
      ).byName.get("train")!;
    const [one, two, half] = [make(), make(2500), make(500)];
    const threads = (s: { config: unknown }) => (s.config as { threads: number }).threads;
    expect([one, two, half].map(threads)).toEqual([1, 2, 1]);
    expect(two.outputPath).toBe(one.outputPath);
  });

  it("leaves ranks out of the step's identity (levanter gives the same bits on any number of ranks)", () => {
    const make = (ranks?: number) =>
      resolveGraph(
        [trainLmStep({ data: outputOf(data), model: { dModel: 32, nHeads: 4 }, trainer: { numTrainSteps: 10, batchSize: 8, microBatches: 4 }, ...(ranks ? { ranks } : {}) })],
        prefix,
      ).byName.get("train")!;
    expect(make(2).outputPath).toBe(make().outputPath);
    expect((make(2).config as { ranks: number }).ranks).toBe(2);
    expect(resolveError({ ranks: 0 })).toMatch(/ranks/);
  });

  it("names a misspelled trainer key with a suggestion, without a spurious missing-field error", () => {
    const msg = resolveError({ trainer: { numTrainStep: 20 } as never });
    expect(msg).toContain("unknown key trainer.numTrainStep (did you mean numTrainSteps?)");
    expect(msg).not.toMatch(/missing|nonoptional|expected number/);
    expect(resolveError({ optimzer: {} } as never)).toContain("unknown key optimzer (did you mean optimizer?)");
  });

  it("refuses a bad model, optimizer or trainer field at resolve time, naming its path", () => {
    expect(resolveError({ trainer: { numTrainSteps: -3 } })).toMatch(/trainer\.numTrainSteps: .*got -3/);
    expect(resolveError({ model: { dModel: 30, nHeads: 4 } })).toMatch(/model\.dModel: dModel must be divisible by nHeads/);
    expect(resolveError({ model: { dModle: 32 } as never })).toMatch(/unknown key model\.dModle \(did you mean dModel\?\)/);
    expect(resolveError({ optimizer: { beta1: 2 } })).toMatch(/optimizer\.beta1: .*got 2/);
    expect(resolveError({ trainer: { numTrainSteps: 10, batchSize: 8, microBatchSize: 3 } })).toMatch(/trainer\.microBatchSize: batchSize must be a multiple/);
  });

  it("knows the same model and optimizer fields as levanter, and the trainer fields it passes", () => {
    const shape = (s: unknown) => Object.keys((s as { shape: Record<string, unknown> }).shape).sort();
    const mine = trainLmStepConfigSchema.shape;
    expect(shape(mine.model)).toEqual(shape(ModelConfigSchema));
    expect(shape(mine.optimizer)).toEqual(shape(OptimizerConfigSchema));
    const levanterTrainer = shape(TrainerConfigSchema);
    for (const k of shape(mine.trainer).filter((k) => k !== "checkpointIntervalSeconds")) expect(levanterTrainer).toContain(k);
  });

  it("agrees with levanter on what it refuses", () => {
    const models: unknown[] = [
      { dModel: 30, nHeads: 4 },
      { nLayers: 0 },
      { positions: "rope", dModel: 12, nHeads: 4 },
      { activation: "relu" },
      { dModel: 64, nHeads: 8 },
      { nHeads: 4, nKvHeads: 3 },
      { nHeads: 4, nKvHeads: 2 },
      { dModel: 30, nHeads: 4, headDim: 8 },
      { positions: "rope", dModel: 30, nHeads: 4, headDim: 7 },
    ];
    for (const m of models) expect(trainLmStepConfigSchema.shape.model.safeParse(m).success, JSON.stringify(m)).toBe(ModelConfigSchema.safeParse(m).success);
    const opts: unknown[] = [{ beta1: 2 }, { warmup: 1.5 }, { cycles: 2, cycleLength: 10 }, { lrSchedule: "step" }, { learningRate: 1e-3, warmup: 0.1 }];
    for (const o of opts) expect(trainLmStepConfigSchema.shape.optimizer.safeParse(o).success, JSON.stringify(o)).toBe(OptimizerConfigSchema.safeParse(o).success);
  });

  it("trains on a mixture of tokenize outputs instead of data, and refuses a bad one at resolve time", () => {
    const other = defineStep({ name: "tokenize-b", config: {}, fn: () => undefined });
    const make = (mixture: unknown, withData = false) =>
      trainLmStep({ ...(withData ? { data: outputOf(data) } : {}), mixture: mixture as never, model: { dModel: 32, nHeads: 4 }, trainer: { numTrainSteps: 10 } });
    const ok = {
      sources: [
        { name: "a", data: outputOf(data), weight: 2 },
        { name: "b", data: outputOf(other), weight: 1, validation: false },
      ],
      weightsAt: [{ step: 5, weights: { b: 1 } }],
    };
    const g = resolveGraph([make(ok)], prefix);
    const train = g.byName.get("train")!;
    expect(train.config).toMatchObject({
      mixture: {
        sources: [
          { name: "a", weight: 2, validation: true },
          { name: "b", weight: 1, validation: false },
        ],
        weightsAt: [{ step: 5 }],
      },
    });
    expect(train.config).not.toHaveProperty("data");
    // Both tokenize steps are upstream of it.
    expect(g.byName.has("tokenize")).toBe(true);
    expect(g.byName.has("tokenize-b")).toBe(true);
    // The mixture is part of the identity; data alone keeps the identity it had.
    expect(resolveGraph([make({ ...ok, sources: [ok.sources[0], { ...ok.sources[1], weight: 3 }] })], prefix).byName.get("train")!.outputPath).not.toBe(train.outputPath);
    const plain = resolveGraph([trainLmStep({ data: outputOf(data), model: { dModel: 32, nHeads: 4 }, trainer: { numTrainSteps: 10 } })], prefix).byName.get("train")!;
    expect(Object.keys(plain.config as object)).not.toContain("mixture");
    const err = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error("expected the graph to be refused");
    };
    expect(err(() => resolveGraph([make({ sources: [{ name: "a", data: outputOf(data), weight: 0 }] })], prefix))).toMatch(/mixture\.sources: the weights sum to 0/);
    expect(err(() => resolveGraph([make({ sources: [{ name: "a b", data: outputOf(data), weight: 1 }] })], prefix))).toMatch(/mixture\.sources\[0\]\.name/);
    expect(err(() => resolveGraph([trainLmStep({ model: { dModel: 32, nHeads: 4 }, trainer: { numTrainSteps: 10 } })], prefix))).toMatch(/data: set data .* or mixture/);
  });
});
