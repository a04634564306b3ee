import { defineConfig } from "vitest/config";
import projects from "./vitest.workspace.ts";

// vitest.workspace.ts is the source of truth for the projects; this file only hands it to Vitest 4.
export default defineConfig({
  test: {
    projects,
    passWithNoTests: true,
  },
});
