// Fused causal multi-head (and grouped-query) attention on the wasm heap, forward and gradient,
// straight from the QKV projection's output [B·T, (H + 2·Hkv)·dh] (H query, Hkv key and Hkv value
// heads side by side, as the model lays them out; query head h reads key/value head h / (H / Hkv))
// to the merged heads [B·T, H·dh]: no head transposes, splits or concats, no mask tensor, and only
// the causal half of every score matrix is computed. The forward runs one work item per (sequence,
// query head), the gradient one per (sequence, key/value head), its query heads in order: each item
// writes its own columns, in a fixed order, so results are bitwise identical for every thread count.
// Rotary positions (Hugging Face's rotate-half layout) are a separate elementwise kernel on the same
// [B·T, (H + 2·Hkv)·dh] layout, with its exact transpose as the gradient.
// The AVX2 and scalar forms of its two products give the same bits (see below). Compiled with -ffp-contract=off.
#include "heap.h"
#include "attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <immintrin.h>

#include "pool.h"
#include "vecmath.h"

namespace {

using levanter::Heap;
using levanter::at;
using levanter::f32;
using levanter::heapOf;
using levanter::num;


struct Shape {
  long B, T, H, dh, Hkv;
  long D() const { return H * dh; }                 // width of the merged heads
  long ld() const { return (H + 2 * Hkv) * dh; }    // width of a qkv row
  long group() const { return H / Hkv; }            // query heads per key/value head
};

// Row i of the probabilities: p[j] = softmax_j≤i(scale · q_i·k_j), p[j > i] = 0. s holds q_i·k_j.
inline void softmaxRow(float* p, long i, long T, float scale) {
  const long n = i + 1;
  for (long j = 0; j < n; j++) p[j] = p[j] * scale;
  float mx = -INFINITY;
  for (long j = 0; j < n; j++) mx = std::max(mx, p[j]);
  float s;
  if (vm::haveAvx2()) {
    s = vm::expShiftSumAvx2(p, mx, p, n);
  } else {
    s = 0.f;
    for (long j = 0; j < n; j++) {
      p[j] = std::exp(p[j] - mx);
      s += p[j];
    }
  }
  const float inv = 1.f / s;
  for (long j = 0; j < n; j++) p[j] = p[j] * inv;
  for (long j = n; j < T; j++) p[j] = 0.f;
}

// The two products every step of attention is made of, each element summed in order with
// separately rounded multiplies and adds, so the AVX2 form and the scalar one give the same bits.

// dst[j] = Σ_d a[d]·mt[d·T + j] for j < n (mt: an operand stored transposed, [dh, T]).
void rowDotTScalar(const float* a, const float* mt, long dh, long T, long n, float* dst) {
  for (long j = 0; j < n; j++) {
    float acc = 0.f;
    for (long d = 0; d < dh; d++) acc = acc + a[d] * mt[d * T + j];
    dst[j] = acc;
  }
}

__attribute__((target("avx2"))) void rowDotTAvx2(const float* a, const float* mt, long dh, long T, long n, float* dst) {
  long j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (long d = 0; d < dh; d++) {
      const __m256 ad = _mm256_set1_ps(a[d]);
      acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(ad, _mm256_loadu_ps(mt + d * T + j)));
      acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(ad, _mm256_loadu_ps(mt + d * T + j + 8)));
    }
    _mm256_storeu_ps(dst + j, acc0);
    _mm256_storeu_ps(dst + j + 8, acc1);
  }
  for (; j + 8 <= n; j += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (long d = 0; d < dh; d++) acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(a[d]), _mm256_loadu_ps(mt + d * T + j)));
    _mm256_storeu_ps(dst + j, acc);
  }
  if (j < n) rowDotTScalar(a, mt + j, dh, T, n - j, dst + j);
}

// dst[d · dstStride] = Σ_j w[j·ws]·x[j·ld + d] for d < dh, j < n in order.
void weightedRowsScalar(const float* w, long ws, const float* x, long ld, long n, long dh, float* dst) {
  for (long d = 0; d < dh; d++) {
    float acc = 0.f;
    for (long j = 0; j < n; j++) acc = acc + w[j * ws] * x[j * ld + d];
    dst[d] = acc;
  }
}

__attribute__((target("avx2"))) void weightedRowsAvx2(const float* w, long ws, const float* x, long ld, long n, long dh, float* dst) {
  long d = 0;
  for (; d + 32 <= dh; d += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (long j = 0; j < n; j++) {
      const __m256 wj = _mm256_set1_ps(w[j * ws]);
      const float* xr = x + j * ld + d;
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(wj, _mm256_loadu_ps(xr)));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(wj, _mm256_loadu_ps(xr + 8)));
      a2 = _mm256_add_ps(a2, _mm256_mul_ps(wj, _mm256_loadu_ps(xr + 16)));
      a3 = _mm256_add_ps(a3, _mm256_mul_ps(wj, _mm256_loadu_ps(xr + 24)));
    }
    _mm256_storeu_ps(dst + d, a0);
    _mm256_storeu_ps(dst + d + 8, a1);
    _mm256_storeu_ps(dst + d + 16, a2);
    _mm256_storeu_ps(dst + d + 24, a3);
  }
  for (; d + 8 <= dh; d += 8) {
    __m256 a0 = _mm256_setzero_ps();
    for (long j = 0; j < n; j++) a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_set1_ps(w[j * ws]), _mm256_loadu_ps(x + j * ld + d)));
    _mm256_storeu_ps(dst + d, a0);
  }
  if (d < dh) weightedRowsScalar(w, ws, x + d, ld, n, dh - d, dst + d);
}

inline void rowDotT(const float* a, const float* mt, long dh, long T, long n, float* dst) {
  if (vm::haveAvx2()) rowDotTAvx2(a, mt, dh, T, n, dst);
  else rowDotTScalar(a, mt, dh, T, n, dst);
}

inline void weightedRows(const float* w, long ws, const float* x, long ld, long n, long dh, float* dst) {
  if (vm::haveAvx2()) weightedRowsAvx2(w, ws, x, ld, n, dh, dst);
  else weightedRowsScalar(w, ws, x, ld, n, dh, dst);
}

void forwardItem(const float* qkv, float* out, float* probs, const Shape& s, long item, float scale) {
  const long b = item / s.H, h = item % s.H, T = s.T, dh = s.dh, D = s.D(), ld = s.ld();
  const float* q = qkv + b * T * ld + h * dh;
  const float* k = qkv + b * T * ld + D + (h / s.group()) * dh;
  const float* v = k + s.Hkv * dh;
  float* P = probs + item * T * T;
  thread_local std::vector<float> kt;
  kt.resize(static_cast<size_t>(dh * T));
  for (long j = 0; j < T; j++)
    for (long d = 0; d < dh; d++) kt[d * T + j] = k[j * ld + d];
  for (long i = 0; i < T; i++) {
    float* p = P + i * T;
    rowDotT(q + i * ld, kt.data(), dh, T, i + 1, p);  // S_ij = q_i · k_j
    softmaxRow(p, i, T, scale);
    weightedRows(p, 1, v, ld, i + 1, dh, out + (b * T + i) * D + h * dh);  // O_i = Σ_j P_ij v_j
  }
}

// dst[d] (+)= Σ_j w[j·ws]·x[j·ld + d]: written for the group's first query head, added after.
inline void weightedRowsInto(const float* w, long ws, const float* x, long ld, long n, long dh, float* dst, bool add,
                             float* tmp) {
  if (!add) {
    weightedRows(w, ws, x, ld, n, dh, dst);
    return;
  }
  weightedRows(w, ws, x, ld, n, dh, tmp);
  for (long d = 0; d < dh; d++) dst[d] = dst[d] + tmp[d];
}

// One (sequence, key/value head): the gradients of its query heads' q, and of its k and v summed
// over those query heads in order (one head: written directly, as plain multi-head attention).
void backwardItem(const float* qkv, const float* probs, const float* dout, float* dqkv, const Shape& s, long item,
                  float scale) {
  const long g = s.group();
  const long b = item / s.Hkv, kh = item % s.Hkv, T = s.T, dh = s.dh, D = s.D(), ld = s.ld();
  const float* k = qkv + b * T * ld + D + kh * dh;
  const float* v = k + s.Hkv * dh;
  float* dk = dqkv + b * T * ld + D + kh * dh;
  float* dv = dk + s.Hkv * dh;
  thread_local std::vector<float> vt, dS, tmp;
  vt.resize(static_cast<size_t>(dh * T));
  dS.resize(static_cast<size_t>(T * T));
  tmp.resize(static_cast<size_t>(dh));
  for (long j = 0; j < T; j++)
    for (long d = 0; d < dh; d++) vt[d * T + j] = v[j * ld + d];
  for (long r = 0; r < g; r++) {
    const long h = kh * g + r;
    const float* q = qkv + b * T * ld + h * dh;
    const float* dO = dout + b * T * D + h * dh;
    float* dq = dqkv + b * T * ld + h * dh;
    const float* P = probs + (b * s.H + h) * T * T;
    for (long i = 0; i < T; i++) {
      const float* p = P + i * T;
      float* ds = dS.data() + i * T;
      const long n = i + 1;
      rowDotT(dO + i * D, vt.data(), dh, T, n, ds);  // dP_ij = dO_i · v_j
      float dot = 0.f;
      for (long j = 0; j < n; j++) dot += p[j] * ds[j];
      // The softmax gradient, then the score scale; zero above the diagonal.
      for (long j = 0; j < n; j++) ds[j] = p[j] * (ds[j] - dot) * scale;
      for (long j = n; j < T; j++) ds[j] = 0.f;
      weightedRows(ds, 1, k, ld, n, dh, dq + i * ld);  // dQ_i = Σ_j dS_ij k_j
    }
    for (long j = 0; j < T; j++) {
      weightedRowsInto(dS.data() + j * T + j, T, q + j * ld, ld, T - j, dh, dk + j * ld, r > 0, tmp.data());  // dK_j = Σ_i≥j dS_ij q_i
      weightedRowsInto(P + j * T + j, T, dO + j * D, D, T - j, dh, dv + j * ld, r > 0, tmp.data());           // dV_j = Σ_i≥j P_ij dO_i
    }
  }
}

// batch, seq, heads, headDim at `first`; kvHeads (default: heads) at `kvAt`.
Shape shapeOf(const Napi::CallbackInfo& info, size_t first, size_t kvAt) {
  Shape s{num(info, first), num(info, first + 1), num(info, first + 2), num(info, first + 3), 0};
  s.Hkv = info.Length() > kvAt && !info[kvAt].IsUndefined() ? num(info, kvAt) : s.H;
  if (s.B < 0 || s.T < 0 || s.H <= 0 || s.dh <= 0 || s.Hkv <= 0 || s.H % s.Hkv != 0)
    throw Napi::RangeError::New(info.Env(), "levanter native: attention shape must be batch, seq ≥ 0 and heads, headDim, kvHeads > 0 with kvHeads dividing heads");
  return s;
}

// causalAttention(heap, qkv, out, probs, batch, seq, heads, headDim, scale[, kvHeads])
Napi::Value CausalAttention(const Napi::CallbackInfo& info) {
  const Heap hp = heapOf(info[0]);
  const Shape s = shapeOf(info, 4, 9);
  const long rows = s.B * s.T;
  const float* qkv = at<const float>(info, hp, 1, rows * s.ld());
  float* out = at<float>(info, hp, 2, rows * s.D());
  float* probs = at<float>(info, hp, 3, s.B * s.H * s.T * s.T);
  const float scale = info[8].As<Napi::Number>().FloatValue();
  sharedPool().run(s.B * s.H, [&](long item) { forwardItem(qkv, out, probs, s, item, scale); });
  return info.Env().Undefined();
}

// causalAttentionGrad(heap, qkv, probs, dout, dqkv, batch, seq, heads, headDim, scale[, kvHeads])
Napi::Value CausalAttentionGrad(const Napi::CallbackInfo& info) {
  const Heap hp = heapOf(info[0]);
  const Shape s = shapeOf(info, 5, 10);
  const long rows = s.B * s.T;
  const float* qkv = at<const float>(info, hp, 1, rows * s.ld());
  const float* probs = at<const float>(info, hp, 2, s.B * s.H * s.T * s.T);
  const float* dout = at<const float>(info, hp, 3, rows * s.D());
  float* dqkv = at<float>(info, hp, 4, rows * s.ld());
  const float scale = info[9].As<Napi::Number>().FloatValue();
  sharedPool().run(s.B * s.Hkv, [&](long item) { backwardItem(qkv, probs, dout, dqkv, s, item, scale); });
  return info.Env().Undefined();
}

// Rotate-half rotary positions on the query and key heads of qkv [B·T, (H + 2·Hkv)·dh] (the row at
// sequence position t = row % T uses the tables' row t; cos, sin [≥T, dh] as the model holds them,
// each half repeated), value heads copied. Forward, per pair (x1, x2) at columns (j, j + dh/2):
//   y1 = x1·c1 + (−x2)·s1,  y2 = x2·c2 + x1·s2
// and its transpose (inverse = true, the gradient):
//   dx1 = dy1·c1 + dy2·s2,  dx2 = dy2·c2 + (−dy1)·s1
// each product and sum rounded separately, as the op-by-op form computes them.
void ropeRow(const float* x, float* y, const float* c, const float* sn, long heads, long dh, bool inverse) {
  const long half = dh / 2;
  for (long hh = 0; hh < heads; hh++) {
    const float* a = x + hh * dh;
    float* o = y + hh * dh;
    // Two branch-free loops (the compiler vectorises each; no contraction: -ffp-contract=off).
    if (!inverse) {
      for (long j = 0; j < half; j++) {
        const float x1 = a[j], x2 = a[j + half];
        o[j] = x1 * c[j] + (-x2) * sn[j];
        o[j + half] = x2 * c[j + half] + x1 * sn[j + half];
      }
    } else {
      for (long j = 0; j < half; j++) {
        const float x1 = a[j], x2 = a[j + half];
        o[j] = x1 * c[j] + x2 * sn[j + half];
        o[j + half] = x2 * c[j + half] + (-x1) * sn[j];
      }
    }
  }
}

// rotary(heap, x, y, cos, sin, batch, seq, heads, kvHeads, headDim, tableRows, inverse)
Napi::Value Rotary(const Napi::CallbackInfo& info) {
  const Heap hp = heapOf(info[0]);
  const long B = num(info, 5), T = num(info, 6), H = num(info, 7), Hkv = num(info, 8), dh = num(info, 9), rowsT = num(info, 10);
  if (B < 0 || T < 0 || H <= 0 || Hkv <= 0 || dh <= 0 || dh % 2 != 0 || rowsT < T)
    throw Napi::RangeError::New(info.Env(), "levanter native: rotary shape must be batch, seq ≥ 0, heads, kvHeads > 0, an even headDim and tables of ≥ seq rows");
  const bool inverse = info[11].ToBoolean();
  const long ld = (H + 2 * Hkv) * dh, rows = B * T;
  const float* x = at<const float>(info, hp, 1, rows * ld);
  float* y = at<float>(info, hp, 2, rows * ld);
  const float* c = at<const float>(info, hp, 3, rowsT * dh);
  const float* sn = at<const float>(info, hp, 4, rowsT * dh);
  constexpr long CHUNK = 16;
  sharedPool().run((rows + CHUNK - 1) / CHUNK, [&](long item) {
    for (long r = item * CHUNK; r < std::min(rows, (item + 1) * CHUNK); r++) {
      const long t = r % T;
      ropeRow(x + r * ld, y + r * ld, c + t * dh, sn + t * dh, H + Hkv, dh, inverse);
      const long vo = (H + Hkv) * dh;
      std::copy(x + r * ld + vo, x + (r + 1) * ld, y + r * ld + vo);
    }
  });
  return info.Env().Undefined();
}

}  // namespace

void registerAttention(Napi::Env env, Napi::Object exports) {
  exports.Set("causalAttention", Napi::Function::New(env, CausalAttention));
  exports.Set("causalAttentionGrad", Napi::Function::New(env, CausalAttentionGrad));
  exports.Set("rotary", Napi::Function::New(env, Rotary));
}
