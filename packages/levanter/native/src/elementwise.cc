// Elementwise binary kernels with broadcasting (add, sub, mul, div), the sum over a contiguous
// block of axes, and the embedding gradient (unsortedSegmentSum) on the wasm heap. A binary op gets its operands as up to 4 collapsed output
// dimensions with a stride per operand (0 where it broadcasts); the output is split into
// shape-fixed chunks of elements that the pool's threads take. Every element is one IEEE float32
// operation, so results equal tfjs' own kernels bit for bit, for any thread count.
#include "heap.h"
#include "elementwise.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "pool.h"

namespace {

using levanter::Heap;
using levanter::at;
using levanter::f32;
using levanter::heapOf;
using levanter::num;


constexpr long GRAIN = 1L << 14;

struct AddOp {
  static float f(float a, float b) { return a + b; }
};
struct SubOp {
  static float f(float a, float b) { return a - b; }
};
struct MulOp {
  static float f(float a, float b) { return a * b; }
};
struct DivOp {
  static float f(float a, float b) { return a / b; }
};

// out[j] = a[j·sa] ∘ b[j·sb] for j < n, the contiguous and broadcast cases as separate loops.
template <class Op>
void span(const float* a, long sa, const float* b, long sb, float* out, long n) {
  if (sa == 1 && sb == 1) {
    for (long j = 0; j < n; j++) out[j] = Op::f(a[j], b[j]);
  } else if (sa == 1 && sb == 0) {
    const float bv = b[0];
    for (long j = 0; j < n; j++) out[j] = Op::f(a[j], bv);
  } else if (sa == 0 && sb == 1) {
    const float av = a[0];
    for (long j = 0; j < n; j++) out[j] = Op::f(av, b[j]);
  } else {
    for (long j = 0; j < n; j++) out[j] = Op::f(a[j * sa], b[j * sb]);
  }
}

template <class Op>
void binaryRun(const float* a, const float* b, float* out, const long* dims, const long* sa, const long* sb) {
  const long n = dims[0] * dims[1] * dims[2] * dims[3];
  const long chunks = (n + GRAIN - 1) / GRAIN;
  auto chunk = [&](long c) {
    const long lo = c * GRAIN, hi = std::min(n, lo + GRAIN);
    for (long o = lo; o < hi;) {
      long rem = o, offA = 0, offB = 0;
      const long i3 = rem % dims[3];
      rem /= dims[3];
      for (int k = 2; k >= 0; k--) {
        const long ik = rem % dims[k];
        rem /= dims[k];
        offA += ik * sa[k];
        offB += ik * sb[k];
      }
      const long len = std::min(dims[3] - i3, hi - o);
      span<Op>(a + offA + i3 * sa[3], sa[3], b + offB + i3 * sb[3], sb[3], out + o, len);
      o += len;
    }
  };
  if (chunks <= 1) {
    if (n > 0) chunk(0);
  } else {
    sharedPool().run(chunks, chunk);
  }
}

// binary(heap, op, a, b, out, d0, d1, d2, d3, sa0..sa3, sb0..sb3); op: 0 add, 1 sub, 2 mul, 3 div.
Napi::Value Binary(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long op = num(info, 1);
  long dims[4], sa[4], sb[4];
  long spanA = 1, spanB = 1;
  for (int k = 0; k < 4; k++) {
    dims[k] = num(info, 5 + k);
    sa[k] = num(info, 9 + k);
    sb[k] = num(info, 13 + k);
    if (dims[k] < 0 || sa[k] < 0 || sb[k] < 0) throw Napi::RangeError::New(info.Env(), "levanter native: negative dimension or stride");
    if (dims[k] > 0) {
      spanA += (dims[k] - 1) * sa[k];
      spanB += (dims[k] - 1) * sb[k];
    }
  }
  const long n = dims[0] * dims[1] * dims[2] * dims[3];
  if (n == 0) return info.Env().Undefined();
  const float* a = at<const float>(info, h, 2, spanA);
  const float* b = at<const float>(info, h, 3, spanB);
  float* out = at<float>(info, h, 4, n);
  switch (op) {
    case 0: binaryRun<AddOp>(a, b, out, dims, sa, sb); break;
    case 1: binaryRun<SubOp>(a, b, out, dims, sa, sb); break;
    case 2: binaryRun<MulOp>(a, b, out, dims, sa, sb); break;
    case 3: binaryRun<DivOp>(a, b, out, dims, sa, sb); break;
    default: throw Napi::RangeError::New(info.Env(), "levanter native: binary op must be 0..3");
  }
  return info.Env().Undefined();
}

// unsortedSegmentSum(heap, x, ids, out, n, row, segments): out[s] = Σ_{i: ids[i] = s} x[i] over
// rows of `row` floats, i in order; ids outside [0, segments) are dropped (TF semantics).
// Threads split the columns, so every sum keeps its order.
Napi::Value UnsortedSegmentSum(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long n = num(info, 4), row = num(info, 5), segments = num(info, 6);
  const float* x = at<const float>(info, h, 1, n * row);
  const int32_t* ids = at<const int32_t>(info, h, 2, n);
  float* out = at<float>(info, h, 3, segments * row);
  std::memset(out, 0, static_cast<size_t>(segments * row) * sizeof(float));
  constexpr long COLS = 64;
  const long blocks = (row + COLS - 1) / COLS;
  auto block = [&](long c) {
    const long j0 = c * COLS, j1 = std::min(row, j0 + COLS);
    for (long i = 0; i < n; i++) {
      const int32_t s = ids[i];
      if (s < 0 || s >= segments) continue;
      const float* src = x + i * row;
      float* dst = out + s * row;
      for (long j = j0; j < j1; j++) dst[j] = dst[j] + src[j];
    }
  };
  if (n * row >= GRAIN && blocks > 1) sharedPool().run(blocks, block);
  else
    for (long c = 0; c < blocks; c++) block(c);
  return info.Env().Undefined();
}

// sum(heap, x, out, p, r, q): out[i, k] = Σ_j x[i, j, k] over j in order (x as [p, r, q]; r = 0
// gives zeros). Threads split i (or, for p = 1, blocks of k); every sum keeps its order.
Napi::Value Sum(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long p = num(info, 3), r = num(info, 4), q = num(info, 5);
  const float* x = at<const float>(info, h, 1, p * r * q);
  float* out = at<float>(info, h, 2, p * q);
  if (p * q == 0) return info.Env().Undefined();
  auto rows = [&](long i, long k0, long k1) {
    const float* xi = x + i * r * q;
    float* o = out + i * q;
    if (q == 1) {
      float s = 0.f;
      for (long j = 0; j < r; j++) s += xi[j];
      o[0] = s;
      return;
    }
    for (long k = k0; k < k1; k++) o[k] = 0.f;
    for (long j = 0; j < r; j++) {
      const float* xr = xi + j * q;
      for (long k = k0; k < k1; k++) o[k] = o[k] + xr[k];
    }
  };
  const long work = p * r * q;
  if (work < GRAIN) {
    for (long i = 0; i < p; i++) rows(i, 0, q);
  } else if (p > 1) {
    const long grain = std::max<long>(1, GRAIN / std::max<long>(r * q, 1));
    sharedPool().run((p + grain - 1) / grain, [&](long c) {
      for (long i = c * grain; i < std::min(p, (c + 1) * grain); i++) rows(i, 0, q);
    });
  } else {
    constexpr long COLS = 256;
    sharedPool().run((q + COLS - 1) / COLS, [&](long c) { rows(0, c * COLS, std::min(q, (c + 1) * COLS)); });
  }
  return info.Env().Undefined();
}

}  // namespace

void registerElementwise(Napi::Env env, Napi::Object exports) {
  exports.Set("binary", Napi::Function::New(env, Binary));
  exports.Set("unsortedSegmentSum", Napi::Function::New(env, UnsortedSegmentSum));
  exports.Set("sum", Napi::Function::New(env, Sum));
}
