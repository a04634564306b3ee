// Original file: proto/iris/v1/types.proto


/**
 * Run any program: argv[0] is looked up on the worker's PATH.
 */
export interface CommandEntrypoint {
  'argv'?: (string)[];
  'cwd'?: (string);
}

/**
 * Run any program: argv[0] is looked up on the worker's PATH.
 */
export interface CommandEntrypoint__Output {
  'argv': (string)[];
  'cwd': (string);
}
