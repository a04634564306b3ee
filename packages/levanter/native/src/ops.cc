// Non-GEMM kernels working in place on the wasm heap.
#include "ops.h"

void registerOps(Napi::Env, Napi::Object) {}
