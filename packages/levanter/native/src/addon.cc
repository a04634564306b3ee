// The N-API surface of levanter's native kernels. Every kernel takes the tfjs wasm heap (an
// ArrayBuffer) and byte offsets into it, and works on it in place: no copies in or out.
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "heap.h"
#include "attention.h"
#include "decode.h"
#include "elementwise.h"
#include "exactsum.h"
#include "gemm.h"
#include "ops.h"
#include "pool.h"

namespace {

using levanter::Heap;
using levanter::at;
using levanter::f32;
using levanter::heapOf;
using levanter::num;

Pool& pool() { return sharedPool(); }

template <typename T>
T* at(const Napi::CallbackInfo& info, const Heap& h, size_t i) {
  const int64_t off = info[i].As<Napi::Number>().Int64Value();
  if (off < 0) return nullptr;
  if (static_cast<size_t>(off) > h.bytes)
    throw Napi::RangeError::New(info.Env(), "levanter native: heap offset out of range");
  return reinterpret_cast<T*>(h.base + off);
}

float fnum(const Napi::CallbackInfo& info, size_t i) { return info[i].As<Napi::Number>().FloatValue(); }

Napi::Value Info(const Napi::CallbackInfo& info) {
  auto env = info.Env();
  auto o = Napi::Object::New(env);
  o.Set("openblas", haveOpenBlas());
  o.Set("gemm", engine() == Engine::OpenBlas ? "openblas" : "vendored");
  o.Set("isa", isaName(activeIsa()));
  o.Set("threads", pool().threads());
  return o;
}

Napi::Value SetThreads(const Napi::CallbackInfo& info) {
  const long n = num(info, 0);
  if (n < 1 || n > 256) throw Napi::RangeError::New(info.Env(), "levanter native: threads must be 1..256");
  pool().resize(static_cast<int>(n));
  return info.Env().Undefined();
}

Napi::Value SetGemm(const Napi::CallbackInfo& info) {
  const std::string name = info[0].As<Napi::String>();
  if (name == "openblas") {
    if (!haveOpenBlas()) return Napi::Boolean::New(info.Env(), false);
    setEngine(Engine::OpenBlas);
  } else if (name == "vendored") {
    setEngine(Engine::Vendored);
  } else {
    throw Napi::TypeError::New(info.Env(), "levanter native: gemm must be openblas | vendored");
  }
  return Napi::Boolean::New(info.Env(), true);
}

Napi::Value SetIsa(const Napi::CallbackInfo& info) {
  const std::string name = info[0].As<Napi::String>();
  Isa isa;
  if (name == "auto") isa = Isa::Auto;
  else if (name == "scalar") isa = Isa::Scalar;
  else if (name == "avx2") isa = Isa::Avx2;
  else if (name == "avx512") isa = Isa::Avx512;
  else throw Napi::TypeError::New(info.Env(), "levanter native: isa must be auto | scalar | avx2 | avx512");
  return Napi::Boolean::New(info.Env(), setIsa(isa));
}

// gemmCalibrate() → { vendored: seconds, openblas?: seconds }: each engine's best time (of 3) on
// three products shaped like a training step's (forward, and the two gradient forms, transposed
// operands included), single-threaded on a private one-thread pool: a few milliseconds. The engine
// in use is left as it was; the caller picks.
Napi::Value GemmCalibrate(const Napi::CallbackInfo& info) {
  auto env = info.Env();
  constexpr long M = 128, N = 256, K = 256;
  std::vector<float> a(M * K > K * N ? M * K : K * N), b(K * N > M * N ? K * N : M * N), c(M * N > K * N ? M * N : K * N);
  for (size_t i = 0; i < a.size(); i++) a[i] = static_cast<float>((i * 7919 % 1000) / 1000.0 - 0.5);
  for (size_t i = 0; i < b.size(); i++) b[i] = static_cast<float>((i * 104729 % 1000) / 1000.0 - 0.5);
  Pool one(1);
  const Engine before = engine();
  auto timeEngine = [&](Engine e) {
    setEngine(e);
    double total = 0;
    // y = x·W [M,K]·[K,N]; dx = dy·Wᵀ [M,N]·[N,K]ᵀ; dW = xᵀ·dy [K,M]ᵀ·[M,N].
    const struct { long m, n, k; bool ta, tb; } shapes[] = {{M, N, K, false, false}, {M, K, N, false, true}, {K, N, M, true, false}};
    for (const auto& sh : shapes) {
      GemmProblem p{};
      p.a = a.data();
      p.b = b.data();
      p.c = c.data();
      p.batches = 1;
      p.m = sh.m;
      p.n = sh.n;
      p.k = sh.k;
      p.transA = sh.ta;
      p.transB = sh.tb;
      p.act = Act::Linear;
      gemm(p, one);  // warm-up (packing buffers, OpenBLAS's first call)
      double best = 1e30;
      for (int r = 0; r < 3; r++) {
        const auto t0 = std::chrono::steady_clock::now();
        gemm(p, one);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      total += best;
    }
    return total;
  };
  auto o = Napi::Object::New(env);
  o.Set("vendored", timeEngine(Engine::Vendored));
  if (haveOpenBlas()) o.Set("openblas", timeEngine(Engine::OpenBlas));
  setEngine(before);
  return o;
}

// matmul(heap, a, b, c, batches, m, n, k, transA, transB, strideA, strideB, bias, biasMode, biasStride, act, alpha)
Napi::Value MatMul(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  GemmProblem p{};
  p.a = at<const float>(info, h, 1);
  p.b = at<const float>(info, h, 2);
  p.c = at<float>(info, h, 3);
  p.batches = num(info, 4);
  p.m = num(info, 5);
  p.n = num(info, 6);
  p.k = num(info, 7);
  p.transA = info[8].ToBoolean();
  p.transB = info[9].ToBoolean();
  p.strideA = num(info, 10);
  p.strideB = num(info, 11);
  p.bias = at<const float>(info, h, 12);
  p.biasMode = static_cast<int>(num(info, 13));
  p.biasStride = num(info, 14);
  p.act = static_cast<Act>(num(info, 15));
  p.alpha = fnum(info, 16);
  gemm(p, pool());
  return info.Env().Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("info", Napi::Function::New(env, Info));
  exports.Set("setThreads", Napi::Function::New(env, SetThreads));
  exports.Set("setGemm", Napi::Function::New(env, SetGemm));
  exports.Set("setIsa", Napi::Function::New(env, SetIsa));
  exports.Set("matmul", Napi::Function::New(env, MatMul));
  exports.Set("gemmCalibrate", Napi::Function::New(env, GemmCalibrate));
  registerOps(env, exports);
  registerAttention(env, exports);
  registerDecode(env, exports);
  registerElementwise(env, exports);
  registerExactSum(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(levanter_native, Init)
