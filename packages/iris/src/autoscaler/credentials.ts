// Worker credentials for provided workers: the controller's per-worker registration credentials
// (controller/workerCredentials.ts). Each worker the autoscaler starts gets a single-use
// credential minted for its worker id alone, handed over in a 0600 file (never argv or the
// environment); at registration it becomes a session bound to that worker and process, which
// survives a controller restart (adoption). Revoking when the worker is stopped refuses both.
import type { WorkerCredentialIssuer } from "./provider.ts";

/** What the controller offers (`Controller.workerCredentials`). */
export interface WorkerCredentialStore {
  mint(workerId: string, opts?: { ttlMs?: number }): string;
  revoke(workerId: string): boolean;
}

/** Mints through the controller's store; "" (no credential) when the controller's auth is off. */
export class ControllerCredentialIssuer implements WorkerCredentialIssuer {
  private readonly store: WorkerCredentialStore;
  private readonly authOn: boolean;

  constructor(store: WorkerCredentialStore, authOn: boolean) {
    this.store = store;
    this.authOn = authOn;
  }

  mint(workerId: string): Promise<string> {
    return Promise.resolve(this.authOn ? this.store.mint(workerId) : "");
  }

  revoke(workerId: string): Promise<void> {
    this.store.revoke(workerId);
    return Promise.resolve();
  }
}
