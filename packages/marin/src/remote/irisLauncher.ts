import { MarinError } from "../errors.ts";
import type { StepLauncher } from "../executor/runner.ts";

/** Where and how iris-run steps are launched. */
export interface IrisLauncherOptions {
  script: string;
  prefix: string;
  cluster: string | undefined;
}

/** Creates the launcher for steps with resources (placeholder until @marin/iris lands). */
export async function createIrisLauncher(_opts: IrisLauncherOptions): Promise<StepLauncher> {
  throw new MarinError("INTERNAL", "running steps with resources needs @marin/iris's LocalCluster, which has not landed yet");
}
