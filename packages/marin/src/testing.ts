// @marin/marin/testing — what tests of pipelines use: the executor's clock and a fake one to drive
// leases and timeouts without waiting (`runGraph({ clock })`).
export { systemClock, FakeClock } from "./executor/clock.ts";
export type { Clock } from "./executor/clock.ts";
