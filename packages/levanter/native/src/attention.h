// Registers the fused causal attention kernels (forward and gradient) on the addon.
#pragma once
#include <napi.h>

void registerAttention(Napi::Env env, Napi::Object exports);
