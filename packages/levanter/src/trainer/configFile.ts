// Training config files: YAML/JSON loading and dotted command-line overrides.
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { LevanterError } from "../errors.ts";
import { parseTrainLmConfig, type TrainLmConfig } from "./trainerConfig.ts";

/**
 * Applies dotted overrides (`a.b=c`, as `--a.b=c` on the command line, leading dashes optional) to
 * a parsed config object, in place. Values are read as YAML scalars/flow values (`3`, `true`,
 * `[1, 2]`, `"text"`), so types match what the file would say.
 */
export function applyOverrides(config: Record<string, unknown>, overrides: readonly string[]): Record<string, unknown> {
  for (const raw of overrides) {
    const arg = raw.replace(/^--/, "");
    const eq = arg.indexOf("=");
    if (eq <= 0) throw new LevanterError("INVALID_CONFIG", `override "${raw}": expected --path.to.field=value`);
    const keys = arg.slice(0, eq).split(".");
    const value: unknown = parseYaml(arg.slice(eq + 1));
    let node: Record<string, unknown> = config;
    for (const [i, k] of keys.slice(0, -1).entries()) {
      const next = node[k];
      if (next === undefined) node[k] = {};
      else if (typeof next !== "object" || next === null || Array.isArray(next)) {
        throw new LevanterError("INVALID_CONFIG", `override "${raw}": ${keys.slice(0, i + 1).join(".")} is not a section`);
      }
      node = node[k] as Record<string, unknown>;
    }
    node[keys.at(-1)!] = value;
  }
  return config;
}

/** Reads a YAML or JSON training config, applies `overrides`, and validates it (errors name the field path). */
export function loadTrainLmConfig(file: string, overrides: readonly string[] = []): TrainLmConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (cause) {
    throw new LevanterError("INVALID_CONFIG", `cannot read config file ${file}`, { cause });
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text) ?? {};
  } catch (cause) {
    throw new LevanterError("INVALID_CONFIG", `${file}: not valid YAML/JSON: ${(cause as Error).message}`, { cause });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new LevanterError("INVALID_CONFIG", `${file}: expected a mapping with model, data, optimizer, trainer`);
  }
  return parseTrainLmConfig(applyOverrides(parsed as Record<string, unknown>, overrides));
}
