// Original file: proto/iris/v1/types.proto

import type { CommandEntrypoint as _iris_v1_CommandEntrypoint, CommandEntrypoint__Output as _iris_v1_CommandEntrypoint__Output } from '../../iris/v1/CommandEntrypoint.ts';
import type { ModuleEntrypoint as _iris_v1_ModuleEntrypoint, ModuleEntrypoint__Output as _iris_v1_ModuleEntrypoint__Output } from '../../iris/v1/ModuleEntrypoint.ts';

export interface Entrypoint {
  'command'?: (_iris_v1_CommandEntrypoint | null);
  'module'?: (_iris_v1_ModuleEntrypoint | null);
  'kind'?: "command"|"module";
}

export interface Entrypoint__Output {
  'command'?: (_iris_v1_CommandEntrypoint__Output | null);
  'module'?: (_iris_v1_ModuleEntrypoint__Output | null);
  'kind'?: "command"|"module";
}
