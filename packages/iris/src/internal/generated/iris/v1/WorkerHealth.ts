// Original file: proto/iris/v1/worker.proto


export interface WorkerHealth {
  'healthy'?: (boolean);
  'error'?: (string);
}

export interface WorkerHealth__Output {
  'healthy': (boolean);
  'error': (string);
}
