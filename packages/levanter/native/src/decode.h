// Registers the serving engine's native decode step (decodeCreate, decodeStep) on the addon.
#pragma once
#include <napi.h>

void registerDecode(Napi::Env env, Napi::Object exports);
