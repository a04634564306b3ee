// Leases with a fake and a real clock: one holder at a time, expiry and takeover, renewal, and a lost lease aborting its holder.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "@marin/iris/testing";
import { FakeClock, systemClock } from "./clock.ts";
import { currentLease, tryAcquireLease } from "./lease.ts";
import type { Lease } from "./lease.ts";

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "marin-lease-"));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe("lease", () => {
  it("one holder at a time; others see who holds it", async () => {
    const clock = new FakeClock();
    const a = await tryAcquireLease(dir, "a", { clock, ttlMs: 1000 });
    const b = await tryAcquireLease(dir, "b", { clock, ttlMs: 1000 });
    expect(a.acquired).toBe(true);
    expect(b.acquired).toBe(false);
    if (!b.acquired) expect(b.holder.owner).toBe("a");
  });

  it("exactly one of many concurrent acquirers wins", async () => {
    const clock = new FakeClock();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => tryAcquireLease(dir, `r${i}`, { clock, ttlMs: 1000 })));
    expect(results.filter((r) => r.acquired)).toHaveLength(1);
  });

  it("a stale (expired) lease is taken over with the next token", async () => {
    const clock = new FakeClock();
    const a = await tryAcquireLease(dir, "a", { clock, ttlMs: 1000 });
    await clock.advance(999);
    expect((await tryAcquireLease(dir, "b", { clock, ttlMs: 1000 })).acquired).toBe(false);
    await clock.advance(2);
    const b = await tryAcquireLease(dir, "b", { clock, ttlMs: 1000 });
    expect(b.acquired).toBe(true);
    if (a.acquired && b.acquired) expect(b.lease.token).toBe(a.lease.token + 1);
    expect((await currentLease(dir))?.owner).toBe("b");
  });

  it("renewal keeps it alive past its first ttl", async () => {
    const clock = new FakeClock();
    const a = await tryAcquireLease(dir, "a", { clock, ttlMs: 900, renewEveryMs: 300 });
    if (!a.acquired) throw new Error("not acquired");
    a.lease.start();
    for (let i = 0; i < 10; i++) {
      await waitFor("a timer on the fake clock", () => clock.pending > 0, { intervalMs: 0 });
      await clock.advance(300);
      await waitFor("the lease to be renewed", async () => ((await currentLease(dir))?.expiresAt ?? 0) > clock.now(), { intervalMs: 0 });
    }
    expect((await tryAcquireLease(dir, "b", { clock, ttlMs: 900 })).acquired).toBe(false);
    expect(a.lease.signal.aborted).toBe(false);
    await a.lease.release();
    expect((await tryAcquireLease(dir, "b", { clock, ttlMs: 900 })).acquired).toBe(true);
  });

  it("a holder that stalls past expiry and is taken over sees its signal abort with LEASE_LOST", async () => {
    const clock = new FakeClock();
    const a = await tryAcquireLease(dir, "a", { clock, ttlMs: 1000, renewEveryMs: 5000 });
    if (!a.acquired) throw new Error("not acquired");
    const lease: Lease = a.lease;
    lease.start();
    await waitFor("a timer on the fake clock", () => clock.pending > 0, { intervalMs: 0 });
    await clock.advance(1500);
    const b = await tryAcquireLease(dir, "b", { clock, ttlMs: 1000 });
    expect(b.acquired).toBe(true);
    await clock.advance(5000);
    await waitFor("the lease to abort", () => lease.signal.aborted, { intervalMs: 0 });
    expect((lease.signal.reason as { code?: string }).code).toBe("LEASE_LOST");
    await expect(lease.assertHeld()).rejects.toMatchObject({ code: "LEASE_LOST" });
    // Releasing a lost lease must not clobber the new holder's.
    await lease.release();
    expect((await currentLease(dir))?.owner).toBe("b");
    expect((await currentLease(dir))?.released).toBeUndefined();
  });

  it("with the real clock, a takeover aborts the old holder at its next renewal", async () => {
    const a = await tryAcquireLease(dir, "a", { clock: systemClock, ttlMs: 300, renewEveryMs: 100 });
    if (!a.acquired) throw new Error("not acquired");
    a.lease.start();
    // Another runner with a different view forces a takeover by writing the next token itself.
    const next = { owner: "b", token: a.lease.token + 1, expiresAt: Date.now() + 60_000, host: "elsewhere", pid: 1 };
    await fs.writeFile(path.join(dir, `lease-${next.token}.json`), JSON.stringify(next));
    await waitFor("the first lease to abort", () => a.lease.signal.aborted, { intervalMs: 0, timeoutMs: 3000 });
    expect((a.lease.signal.reason as { code?: string }).code).toBe("LEASE_LOST");
    await a.lease.stop();
  });
});
