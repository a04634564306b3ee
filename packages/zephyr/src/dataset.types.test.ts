// The runtime half of dataset.test-d.ts: the same inferred expressions, run, so their values are
// checked too (expectTypeOf is a no-op at run time; tsc -b checks the types).
import { describe, expect, expectTypeOf, it } from "vitest";
import { fromList } from "./dataset.ts";
import type { Dataset } from "./dataset.ts";

interface User {
  id: number;
  name: string;
}
interface Order {
  id: number;
  total: number;
}

const inline = { backend: "inline" } as const;

describe("Dataset<T> inference at run time", () => {
  it("inferred operations produce values of the inferred types", async () => {
    const users = fromList<User>([
      { id: 1, name: "ada" },
      { id: 2, name: "bob" },
      { id: 2, name: "bea" },
    ]);
    const orders = fromList<Order>([{ id: 2, total: 9 }]);
    const names = users.map((u) => u.name);
    expectTypeOf(names).toEqualTypeOf<Dataset<string>>();
    expect(await names.collect(inline)).toEqual(["ada", "bob", "bea"]);
    const joined = users.join(orders, (r) => r.id, { kind: "left" });
    expectTypeOf(joined).toEqualTypeOf<Dataset<[left: User, right: Order | undefined]>>();
    const pairs = await joined.map(([u, o]) => `${u.name}:${o?.total ?? "-"}`).collect(inline);
    expect(pairs.sort()).toEqual(["ada:-", "bea:9", "bob:9"]);
    const grouped = users.groupBy(
      (u) => u.id,
      (id, rs) => ({ id, names: rs.map((r) => r.name) }),
    );
    expectTypeOf(grouped).toEqualTypeOf<Dataset<{ id: number; names: string[] }>>();
    const groups = await grouped.collect(inline);
    expect(groups.sort((a, b) => a.id - b.id)).toEqual([
      { id: 1, names: ["ada"] },
      { id: 2, names: ["bob", "bea"] },
    ]);
    const total = users.reduce(
      (acc, u) => acc + u.id,
      0,
      (a, b) => a + b,
    );
    expectTypeOf(total).toEqualTypeOf<Dataset<number>>();
    expect(await total.collect(inline)).toEqual([5]);
    expect(await users.select("name").collect(inline)).toEqual([{ name: "ada" }, { name: "bob" }, { name: "bea" }]);
  });
});
