// Worker credentials for provided workers.
//
// TEMPORARY: per-worker registration credentials (minted for one worker id, revoked when it ends)
// come with the controller's worker-credential mechanism (branch sec-workers). Until it is
// wired, `SharedTokenIssuer` hands every worker the cluster's own token (`controller.token`),
// or "" with auth off, and revoking does nothing. The credential still travels only in a 0600
// file, never argv or the environment, so switching to real per-worker credentials changes this
// file only.
import type { WorkerCredentialIssuer } from "./provider.ts";

/** See the file comment. */
export class SharedTokenIssuer implements WorkerCredentialIssuer {
  private readonly token: string | undefined;
  private readonly authOn: boolean;

  /** `token`: the cluster's `--token`; `authOn`: whether the controller checks tokens at all. */
  constructor(token: string | undefined, authOn: boolean) {
    this.token = token;
    this.authOn = authOn;
  }

  mint(workerId: string): Promise<string> {
    if (!this.authOn) return Promise.resolve("");
    if (this.token === undefined || this.token === "") {
      return Promise.reject(new Error(`cannot mint a credential for ${workerId}: with only an authFile, give controller.token too (per-worker credentials are not wired yet)`));
    }
    return Promise.resolve(this.token);
  }

  revoke(): Promise<void> {
    return Promise.resolve();
  }
}
