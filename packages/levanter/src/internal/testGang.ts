// Test helper: a gang of `world` ranks inside this process, on loopback, met through an
// in-memory rendezvous instead of iris endpoints.
import { formGang, type Gang, type GangOptions } from "../parallel/gang.ts";

/** An in-memory rendezvous: rank 0's registration resolves every other rank's lookup. */
export function memoryRendezvous(): GangOptions["rendezvous"] & { registered: Promise<string> } {
  let announce: (a: string) => void = () => {};
  const registered = new Promise<string>((r) => (announce = r));
  return {
    registered,
    register: async (address) => {
      announce(address);
      return async () => {};
    },
    resolve: () => registered,
  };
}

/** Forms a loopback gang of `world` ranks in this process (all with `secret`). */
export async function localGangs(world: number, extra: Partial<GangOptions> = {}): Promise<Gang[]> {
  const rendezvous = memoryRendezvous();
  return Promise.all([...Array(world).keys()].map((rank) => formGang({ rank, world, secret: "test-secret", host: "127.0.0.1", port: 0, rendezvous, timeoutMs: 10_000, ...extra })));
}
