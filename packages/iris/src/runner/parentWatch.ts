/**
 * Calls `onGone` once, as soon as this process's parent is no longer `parentPid`: at once when
 * the IPC channel to the parent disconnects (the parent died), and otherwise within `pollMs`
 * (the parent died and this process was re-parented). Returns a function that stops watching.
 */
export function watchParent(opts: { parentPid: number; pollMs: number; onGone: () => void }): () => void {
  let fired = false;
  const fire = (): void => {
    if (fired) return;
    fired = true;
    stop();
    opts.onGone();
  };
  const onDisconnect = (): void => fire();
  // The channel must not keep an attempt alive after its work is done.
  process.channel?.unref();
  process.once("disconnect", onDisconnect);
  const timer = setInterval(() => {
    if (process.ppid !== opts.parentPid) fire();
  }, opts.pollMs);
  timer.unref();
  const stop = (): void => {
    clearInterval(timer);
    process.removeListener("disconnect", onDisconnect);
  };
  if (process.ppid !== opts.parentPid || (process.channel !== undefined && !process.connected)) {
    queueMicrotask(fire);
  }
  return stop;
}
