// A small seeded PRNG whose whole state is one uint32, so a checkpoint can store it exactly and
// initialisation is identical on every backend (tfjs' own random ops are backend-specific).

/** A deterministic random stream (mulberry32) with an exportable state. */
export class Rng {
  state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A uniform float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** `n` normal samples with standard deviation `std` (Box–Muller). */
  normal(n: number, std: number): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i += 2) {
      const u = 1 - this.next();
      const r = Math.sqrt(-2 * Math.log(u)) * std;
      const a = 2 * Math.PI * this.next();
      out[i] = r * Math.cos(a);
      if (i + 1 < n) out[i + 1] = r * Math.sin(a);
    }
    return out;
  }
}
