// Reading kernel arguments: the tfjs wasm heap (an ArrayBuffer) and checked pointers to tensors at
// byte offsets into it — shared by every kernel source.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>

namespace levanter {

/** The wasm heap a kernel works on in place. */
struct Heap {
  uint8_t* base;
  size_t bytes;
};

/** The heap behind a kernel's first argument (a TypeError when it is not an ArrayBuffer). */
inline Heap heapOf(const Napi::Value& v) {
  if (!v.IsArrayBuffer()) throw Napi::TypeError::New(v.Env(), "levanter native: expected the wasm heap ArrayBuffer");
  auto ab = v.As<Napi::ArrayBuffer>();
  return {static_cast<uint8_t*>(ab.Data()), ab.ByteLength()};
}

/** A checked pointer to `count` elements of T at the byte offset in argument `i`. */
template <typename T>
T* at(const Napi::CallbackInfo& info, const Heap& h, size_t i, long count) {
  const int64_t off = info[i].As<Napi::Number>().Int64Value();
  if (off < 0 || count < 0 || static_cast<uint64_t>(off) + static_cast<uint64_t>(count) * sizeof(T) > h.bytes)
    throw Napi::RangeError::New(info.Env(), "levanter native: tensor outside the wasm heap");
  return reinterpret_cast<T*>(h.base + off);
}

/** Argument `i` as an integer. */
inline long num(const Napi::CallbackInfo& info, size_t i) { return static_cast<long>(info[i].As<Napi::Number>().Int64Value()); }

/** Argument `i` as a float. */
inline float f32(const Napi::CallbackInfo& info, size_t i) { return info[i].As<Napi::Number>().FloatValue(); }

}  // namespace levanter
