// Registers the exact fixed-point gradient sum's kernels (data parallelism, parallel/exactSum.ts).
#pragma once
#include <napi.h>

void registerExactSum(Napi::Env env, Napi::Object exports);
