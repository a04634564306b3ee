// Registers the elementwise binary kernels with broadcasting, the sum reduction and the segment
// sum on the addon.
#pragma once
#include <napi.h>

void registerElementwise(Napi::Env env, Napi::Object exports);
