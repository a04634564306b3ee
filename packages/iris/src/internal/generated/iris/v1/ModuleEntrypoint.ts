// Original file: proto/iris/v1/types.proto


/**
 * Run `module[export_name](args)` with iris's task runner under tsx. `module` is a file: URL or
 * an absolute path resolved on the worker; `args_json` is the JSON text of the argument
 * ("" means undefined).
 */
export interface ModuleEntrypoint {
  'module'?: (string);
  'exportName'?: (string);
  'argsJson'?: (string);
}

/**
 * Run `module[export_name](args)` with iris's task runner under tsx. `module` is a file: URL or
 * an absolute path resolved on the worker; `args_json` is the JSON text of the argument
 * ("" means undefined).
 */
export interface ModuleEntrypoint__Output {
  'module': (string);
  'exportName': (string);
  'argsJson': (string);
}
