// @marin/levanter/sharding — how data is split across data-parallel ranks, and the token-cache
// layout. zephyr loads this subpath with a dynamic import() without TensorFlow.js installed:
// nothing under src/sharding/ may import @tensorflow/* (enforced by .eslintrc.cjs).
export { shardFor } from "./shardFor.ts";
