// ESLint 10 reads only flat config. The rules live in .eslintrc.cjs (the layer allow-list is the
// source of truth); FlatCompat translates them so that `eslint <file>` applies all of it.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { FlatCompat } from "@eslint/eslintrc";
import js from "@eslint/js";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const compat = new FlatCompat({
  baseDirectory: here,
  resolvePluginsRelativeTo: here,
  recommendedConfig: js.configs.recommended,
  allConfig: js.configs.all,
});

export default [
  { ignores: ["**/node_modules/**", "**/dist/**", "**/.tsbuild/**", "**/internal/generated/**", "marin-out/**", "**/*.tsbuildinfo"] },
  ...compat.config(require("./.eslintrc.cjs")),
];
