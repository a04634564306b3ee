// The order test files start in: Vitest's own (groups in order, then project by project, then the
// slowest or, on a first run, the largest file first), except that the end-to-end files that
// mostly wait (the `<layer>-e2e-waiting` projects, vitest.workspace.ts) start first in their
// group. They run beside lint, typecheck and the unit tests, which keep both cores busy while they
// wait; started first, they are done long before the group's last unit file, so none of them
// holds the group open with the cores idle. (Measured on a clean clone when two of them ran side
// by side among the end-to-end files: 30–70 % idle for about 35 s.)
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** The projects whose files start first in their group. */
export const isWaitingProject = (name: string): boolean => name.endsWith("-e2e-waiting");

/** `items` in order, except that within each run of one group the waiting ones come first. */
export function waitingFirst<T>(items: readonly T[], groupOf: (item: T) => number, isWaiting: (item: T) => boolean): T[] {
  const out: T[] = [];
  for (let i = 0; i < items.length;) {
    let j = i;
    while (j < items.length && groupOf(items[j]!) === groupOf(items[i]!)) j++;
    const block = items.slice(i, j);
    out.push(...block.filter(isWaiting), ...block.filter((x) => !isWaiting(x)));
    i = j;
  }
  return out;
}

export default class WaitingFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return waitingFirst(
      await super.sort(files),
      (s) => s.project.config.sequence.groupOrder,
      (s) => isWaitingProject(s.project.name),
    );
  }
}
