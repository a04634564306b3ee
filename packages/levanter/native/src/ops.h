// Registers the non-GEMM kernels (softmax, norms, elementwise, reductions, optimizer) on the addon.
#pragma once
#include <napi.h>

void registerOps(Napi::Env env, Napi::Object exports);
