// Type tests of Dataset<T> inference. `tsc -b` type-checks this file, so a change that breaks
// inference is a compile error; dataset.types.test.ts runs the same expressions at runtime.
import { describe, expectTypeOf, it } from "vitest";
import { fromFiles, fromIterable, fromList, readJsonl, readParquet, readText } from "./dataset.ts";
import type { Dataset } from "./dataset.ts";
import type { WriteResult } from "./exec/contracts.ts";
import type { TaskContext } from "./plan/ops.ts";
import { definePipeline } from "./pipeline.ts";

interface User {
  id: number;
  name: string;
}
interface Order {
  id: number;
  total: number;
}

describe("Dataset<T> inference", () => {
  it("sources", () => {
    expectTypeOf(fromList([1, 2])).toEqualTypeOf<Dataset<number>>();
    expectTypeOf(fromIterable(new Set(["a"]))).toEqualTypeOf<Dataset<string>>();
    expectTypeOf(fromFiles("*.txt")).toEqualTypeOf<Dataset<string>>();
    expectTypeOf(readText("*.txt")).toEqualTypeOf<Dataset<string>>();
    expectTypeOf(readJsonl<User>("*.jsonl")).toEqualTypeOf<Dataset<User>>();
    expectTypeOf(readJsonl("*.jsonl")).toEqualTypeOf<Dataset<unknown>>();
    expectTypeOf(readParquet("*.parquet")).toEqualTypeOf<Dataset<Record<string, unknown>>>();
  });

  it("operations", () => {
    const users = fromList<User>([]);
    expectTypeOf(users.map((u) => u.name)).toEqualTypeOf<Dataset<string>>();
    expectTypeOf(users.map((u, ctx) => ctx)).toEqualTypeOf<Dataset<TaskContext>>();
    expectTypeOf(users.filter((u) => u.id > 1)).toEqualTypeOf<Dataset<User>>();
    expectTypeOf(fromList<string | number>([]).filter((x): x is string => typeof x === "string")).toEqualTypeOf<Dataset<string>>();
    expectTypeOf(users.filter({ id: { $gt: 3 } })).toEqualTypeOf<Dataset<User>>();
    expectTypeOf(users.select("id")).toEqualTypeOf<Dataset<Pick<User, "id">>>();
    expectTypeOf(users.flatMap((u) => [u.id, u.id])).toEqualTypeOf<Dataset<number>>();
    expectTypeOf(
      users.mapShard(async function* (rs) {
        for await (const r of rs) yield r.name.length;
      }),
    ).toEqualTypeOf<Dataset<number>>();
    expectTypeOf(users.window(3)).toEqualTypeOf<Dataset<User[]>>();
    expectTypeOf(users.reshard(2)).toEqualTypeOf<Dataset<User>>();
    expectTypeOf(users.take(2)).toEqualTypeOf<Dataset<User>>();
    expectTypeOf(
      users.groupBy(
        (u) => u.name,
        (name, rs) => ({ name, n: rs.length }),
      ),
    ).toEqualTypeOf<Dataset<{ name: string; n: number }>>();
    expectTypeOf(users.deduplicate((u) => u.id)).toEqualTypeOf<Dataset<User>>();
    expectTypeOf(users.map((u) => u.id).reduce((a, b) => a + b)).toEqualTypeOf<Dataset<number>>();
    expectTypeOf(
      users.reduce(
        (acc, u) => acc + u.name,
        "",
        (a, b) => a + b,
      ),
    ).toEqualTypeOf<Dataset<string>>();
    const orders = fromList<Order>([]);
    expectTypeOf(users.join(orders, (r) => r.id)).toEqualTypeOf<Dataset<[left: User, right: Order]>>();
    expectTypeOf(users.join(orders, (r) => r.id, { kind: "left" })).toEqualTypeOf<Dataset<[left: User, right: Order | undefined]>>();
    // @ts-expect-error: the key must exist on both sides
    users.join(orders, (r) => r.name);
    // @ts-expect-error: a User has no `total`
    users.map((u) => u.total);
    // @ts-expect-error: select takes field names of the record
    users.select("nope");
  });

  it("sinks", () => {
    const users = fromList<User>([]);
    expectTypeOf(users.collect()).toEqualTypeOf<Promise<User[]>>();
    expectTypeOf(users.count()).toEqualTypeOf<Promise<number>>();
    expectTypeOf(users.collect({ withStats: true }))
      .resolves.toHaveProperty("records")
      .toEqualTypeOf<User[]>();
    expectTypeOf(users.writeJsonl("out-{shard}.jsonl.gz", { backend: "inline", skipExisting: true })).toEqualTypeOf<Promise<WriteResult>>();
  });

  it("pipelines", () => {
    const p = definePipeline(import.meta.url, (args: { n: number }) => fromList([args.n]).map((x) => String(x)));
    expectTypeOf(p({ n: 1 })).toEqualTypeOf<Dataset<string>>();
    // @ts-expect-error: the build function's arguments are required
    p();
    const q = definePipeline(import.meta.url, () => fromList([true]));
    expectTypeOf(q()).toEqualTypeOf<Dataset<boolean>>();
  });
});
