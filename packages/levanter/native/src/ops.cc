// Non-GEMM kernels working in place on the wasm heap: the fused AdamW update, softmax over the
// last axis, exp, softmax cross-entropy, GELU and layer/RMS norm (forward and gradient each) and
// a sum of squares. Work is split into chunks of rows (or elements) whose size depends only on
// the shape, the pool's threads take chunks, and cross-row sums (the norm's scale and bias
// gradients, the sum of squares) add per-chunk partials in chunk order: every result is the same
// for any thread count. Row sums use 8 interleaved lanes combined in a fixed order (vectorisable
// without reassociation). Compiled with -ffp-contract=off: every float32 operation rounds as written.
#include "heap.h"
#include "ops.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "pool.h"
#include "vecmath.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

using levanter::Heap;
using levanter::at;
using levanter::f32;
using levanter::heapOf;
using levanter::num;


// Runs fn(begin, end) over [0, n) in chunks of `grain` items; chunk bounds depend on n and grain
// only, never on the thread count.
template <class F>
void forChunks(long n, long grain, F&& fn) {
  if (n <= 0) return;
  grain = std::max<long>(grain, 1);
  const long chunks = (n + grain - 1) / grain;
  if (chunks == 1) {
    fn(0L, n);
    return;
  }
  sharedPool().run(chunks, [&](long c) { fn(c * grain, std::min(n, (c + 1) * grain)); });
}

// Elements per chunk of the elementwise kernels (a multiple of 8: the AVX2 loops' tails do not
// move), and rows per chunk of a row kernel with `cols` columns.
constexpr long GRAIN = 1L << 14;
inline long rowGrain(long cols) { return std::max<long>(1, GRAIN / std::max<long>(cols, 1)); }

// Σ x[j], and Σ (x[j] − mu)², over 8 interleaved lanes combined in order, then the tail.
inline float laneSum(const float* x, long n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  long j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; l++) acc[l] += x[j + l];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; j < n; j++) s += x[j];
  return s;
}

inline float laneSumSqDev(const float* x, float mu, long n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  long j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; l++) {
      const float d = x[j + l] - mu;
      acc[l] += d * d;
    }
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; j < n; j++) s += (x[j] - mu) * (x[j] - mu);
  return s;
}

// Σ a[j]·b[j] over 8 lanes as above.
inline float laneDot(const float* a, const float* b, long n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  long j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; l++) acc[l] += a[j + l] * b[j + l];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; j < n; j++) s += a[j] * b[j];
  return s;
}

struct AdamWScalars {
  float clip, b1, omb1, b2, omb2, bc1, bc2, eps, wd, lr;
};

// One chunk of the AdamW update, scalar (the reference, and the tail of the AVX2 form).
void adamwScalar(const float* p, const float* g, const float* m, const float* v, float* op, float* om, float* ov, long n, const AdamWScalars& k) {
  const bool clipped = k.clip != 1.f;
  const bool decay = k.wd != 0.f;
  for (long i = 0; i < n; i++) {
    const float gi = clipped ? g[i] * k.clip : g[i];
    const float m1 = m[i] * k.b1 + gi * k.omb1;
    const float gg = gi * gi;
    const float v1 = v[i] * k.b2 + gg * k.omb2;
    float u = (m1 / k.bc1) / (std::sqrt(v1 / k.bc2) + k.eps);
    if (decay) u = u + p[i] * k.wd;
    op[i] = p[i] - u * k.lr;
    om[i] = m1;
    ov[i] = v1;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same float32 operations eight lanes at a time: each is an IEEE add, multiply, divide or
// square root, correctly rounded in either form, so both give the same bits.
__attribute__((target("avx2"))) void adamwAvx2(const float* p, const float* g, const float* m, const float* v, float* op, float* om, float* ov, long n, const AdamWScalars& k) {
  const bool clipped = k.clip != 1.f;
  const bool decay = k.wd != 0.f;
  const __m256 clip = _mm256_set1_ps(k.clip), b1 = _mm256_set1_ps(k.b1), omb1 = _mm256_set1_ps(k.omb1), b2 = _mm256_set1_ps(k.b2), omb2 = _mm256_set1_ps(k.omb2);
  const __m256 bc1 = _mm256_set1_ps(k.bc1), bc2 = _mm256_set1_ps(k.bc2), eps = _mm256_set1_ps(k.eps), wd = _mm256_set1_ps(k.wd), lr = _mm256_set1_ps(k.lr);
  long i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 gi = _mm256_loadu_ps(g + i);
    if (clipped) gi = _mm256_mul_ps(gi, clip);
    const __m256 m1 = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(m + i), b1), _mm256_mul_ps(gi, omb1));
    const __m256 v1 = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + i), b2), _mm256_mul_ps(_mm256_mul_ps(gi, gi), omb2));
    const __m256 pi = _mm256_loadu_ps(p + i);
    __m256 u = _mm256_div_ps(_mm256_div_ps(m1, bc1), _mm256_add_ps(_mm256_sqrt_ps(_mm256_div_ps(v1, bc2)), eps));
    if (decay) u = _mm256_add_ps(u, _mm256_mul_ps(pi, wd));
    _mm256_storeu_ps(op + i, _mm256_sub_ps(pi, _mm256_mul_ps(u, lr)));
    _mm256_storeu_ps(om + i, m1);
    _mm256_storeu_ps(ov + i, v1);
  }
  adamwScalar(p + i, g + i, m + i, v + i, op + i, om + i, ov + i, n - i, k);
}

void adamwLoop(const float* p, const float* g, const float* m, const float* v, float* op, float* om, float* ov, long n, const AdamWScalars& k) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) adamwAvx2(p, g, m, v, op, om, ov, n, k);
  else adamwScalar(p, g, m, v, op, om, ov, n, k);
}
#else
void adamwLoop(const float* p, const float* g, const float* m, const float* v, float* op, float* om, float* ov, long n, const AdamWScalars& k) {
  adamwScalar(p, g, m, v, op, om, ov, n, k);
}
#endif

// adamw(heap, p, g, m, v, outP, outM, outV, n, clip, b1, omb1, b2, omb2, bc1, bc2, eps, wd, lr)
// The same float32 operations, in the same order, as levanter's op-by-op AdamW (optim/adamw.ts):
// g' = g·clip; m' = m·b1 + g'·(1−b1); v' = v·b2 + g'²·(1−b2);
// u = (m'/bc1) / (sqrt(v'/bc2) + eps) [+ p·wd]; p' = p − u·lr. clip = 1 and wd = 0 skip theirs.
Napi::Value AdamW(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long n = num(info, 8);
  const float* p = at<const float>(info, h, 1, n);
  const float* g = at<const float>(info, h, 2, n);
  const float* m = at<const float>(info, h, 3, n);
  const float* v = at<const float>(info, h, 4, n);
  float* op = at<float>(info, h, 5, n);
  float* om = at<float>(info, h, 6, n);
  float* ov = at<float>(info, h, 7, n);
  const float clip = f32(info, 9), b1 = f32(info, 10), omb1 = f32(info, 11), b2 = f32(info, 12), omb2 = f32(info, 13);
  const float bc1 = f32(info, 14), bc2 = f32(info, 15), eps = f32(info, 16), wd = f32(info, 17), lr = f32(info, 18);
  const AdamWScalars k{clip, b1, omb1, b2, omb2, bc1, bc2, eps, wd, lr};
  forChunks(n, GRAIN, [&](long lo, long hi) { adamwLoop(p + lo, g + lo, m + lo, v + lo, op + lo, om + lo, ov + lo, hi - lo, k); });
  return info.Env().Undefined();
}

// sumSquares(heap, x, n) → Σ x² in float64 (in order within each chunk, then chunk by chunk).
Napi::Value SumSquares(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long n = num(info, 2);
  const float* x = at<const float>(info, h, 1, n);
  const long chunks = (n + GRAIN - 1) / GRAIN;
  std::vector<double> part(static_cast<size_t>(std::max<long>(chunks, 1)), 0.0);
  forChunks(n, GRAIN, [&](long lo, long hi) {
    double s = 0;
    for (long i = lo; i < hi; i++) s += static_cast<double>(x[i]) * x[i];
    part[lo / GRAIN] = s;
  });
  double s = 0;
  for (double v : part) s += v;
  return Napi::Number::New(info.Env(), s);
}

// softmax(heap, x, out, rows, cols): softmax over each row of [rows, cols].
Napi::Value Softmax(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long rows = num(info, 3), cols = num(info, 4);
  const float* x = at<const float>(info, h, 1, rows * cols);
  float* out = at<float>(info, h, 2, rows * cols);
  forChunks(rows, rowGrain(cols), [&](long lo, long hi) {
    for (long r = lo; r < hi; r++) {
      const float* xr = x + r * cols;
      float* o = out + r * cols;
      float mx = -INFINITY;
      for (long j = 0; j < cols; j++) mx = std::max(mx, xr[j]);
      if (mx == -INFINITY) mx = 0.f;  // an all −∞ row: exp gives zeros, as tfjs (NaN after 0/0)
      float s = 0.f;
      if (vm::haveAvx2()) {
        s = vm::expShiftSumAvx2(xr, mx, o, cols);
      } else {
        for (long j = 0; j < cols; j++) {
          o[j] = std::exp(xr[j] - mx);
          s += o[j];
        }
      }
      const float inv = 1.f / s;
      for (long j = 0; j < cols; j++) o[j] = o[j] * inv;
    }
  });
  return info.Env().Undefined();
}

// exp(heap, x, out, n)
Napi::Value Exp(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long n = num(info, 3);
  const float* x = at<const float>(info, h, 1, n);
  float* out = at<float>(info, h, 2, n);
  forChunks(n, GRAIN, [&](long lo, long hi) {
    for (long i = lo; i < hi; i++) out[i] = std::exp(x[i]);
  });
  return info.Env().Undefined();
}

// Row r's max and log Σ exp(x − max).
inline void rowLse(const float* x, long cols, float& mx, float& lse) {
  mx = -INFINITY;
  for (long j = 0; j < cols; j++) mx = std::max(mx, x[j]);
  float s = 0.f;
  if (vm::haveAvx2()) {
    s = vm::expShiftSumOnlyAvx2(x, mx, cols);
  } else {
    for (long j = 0; j < cols; j++) s += std::exp(x[j] - mx);
  }
  lse = std::log(s);
}

// crossEntropy(heap, logits, targets, losses, rows, cols): losses[r] = logsumexp(x_r) − x_r[t_r].
// A target outside [0, cols) has an all-zero one-hot row (tfjs' oneHot): loss 0, gradient 0.
Napi::Value CrossEntropy(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long rows = num(info, 4), cols = num(info, 5);
  const float* x = at<const float>(info, h, 1, rows * cols);
  const int32_t* t = at<const int32_t>(info, h, 2, rows);
  float* loss = at<float>(info, h, 3, rows);
  forChunks(rows, rowGrain(cols), [&](long lo, long hi) {
    for (long r = lo; r < hi; r++) {
      const float* xr = x + r * cols;
      float mx, lse;
      rowLse(xr, cols, mx, lse);
      const int32_t tr = t[r];
      loss[r] = (tr >= 0 && tr < cols) ? lse - (xr[tr] - mx) : 0.f;
    }
  });
  return info.Env().Undefined();
}

// crossEntropyGrad(heap, logits, targets, dy, dx, rows, cols): dx = (softmax(x) − onehot(t))·dy[r].
Napi::Value CrossEntropyGrad(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long rows = num(info, 5), cols = num(info, 6);
  const float* x = at<const float>(info, h, 1, rows * cols);
  const int32_t* t = at<const int32_t>(info, h, 2, rows);
  const float* dy = at<const float>(info, h, 3, rows);
  float* dx = at<float>(info, h, 4, rows * cols);
  forChunks(rows, rowGrain(cols), [&](long lo, long hi) {
    for (long r = lo; r < hi; r++) {
      const float* xr = x + r * cols;
      float* o = dx + r * cols;
      const int32_t tr = t[r];
      if (tr < 0 || tr >= cols) {
        std::fill(o, o + cols, 0.f);
        continue;
      }
      float mx, lse;
      rowLse(xr, cols, mx, lse);
      const float d = dy[r];
      if (vm::haveAvx2()) {
        vm::expShiftSumAvx2(xr, mx + lse, o, cols);
        for (long j = 0; j < cols; j++) o[j] = o[j] * d;
      } else {
        for (long j = 0; j < cols; j++) o[j] = std::exp(xr[j] - mx - lse) * d;
      }
      o[tr] = o[tr] - d;
    }
  });
  return info.Env().Undefined();
}

using vm::GELU_A;
using vm::GELU_C2;

// gelu(heap, x, out, n): x·sigmoid(c2·(x + a·x³)), GPT-2's tanh GELU (0.5·(1+tanh u) = sigmoid 2u).
Napi::Value Gelu(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long n = num(info, 3);
  const float* x = at<const float>(info, h, 1, n);
  float* out = at<float>(info, h, 2, n);
  const bool avx2 = vm::haveAvx2();
  forChunks(n, GRAIN, [&](long lo, long hi) {
    if (avx2) {
      vm::geluAvx2(x + lo, out + lo, hi - lo);
      return;
    }
    for (long i = lo; i < hi; i++) {
      const float xi = x[i];
      const float u = GELU_C2 * (xi + GELU_A * xi * xi * xi);
      out[i] = xi / (1.f + std::exp(-u));
    }
  });
  return info.Env().Undefined();
}

// geluGrad(heap, x, dy, dx, n): dy·(s + x·s·(1−s)·c2·(1 + 3a·x²)), s = sigmoid(u).
Napi::Value GeluGrad(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long n = num(info, 4);
  const float* x = at<const float>(info, h, 1, n);
  const float* dy = at<const float>(info, h, 2, n);
  float* dx = at<float>(info, h, 3, n);
  const bool avx2 = vm::haveAvx2();
  forChunks(n, GRAIN, [&](long lo, long hi) {
    if (avx2) {
      vm::geluGradAvx2(x + lo, dy + lo, dx + lo, hi - lo);
      return;
    }
    for (long i = lo; i < hi; i++) {
      const float xi = x[i];
      const float u = GELU_C2 * (xi + GELU_A * xi * xi * xi);
      const float sg = 1.f / (1.f + std::exp(-u));
      dx[i] = dy[i] * (sg + xi * sg * (1.f - sg) * GELU_C2 * (1.f + 3.f * GELU_A * xi * xi));
    }
  });
  return info.Env().Undefined();
}

// swiglu(heap, g, u, out, n): out = (g·sigmoid(g))·u, SwiGLU's gate times its up projection.
Napi::Value Swiglu(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long n = num(info, 4);
  const float* g = at<const float>(info, h, 1, n);
  const float* u = at<const float>(info, h, 2, n);
  float* out = at<float>(info, h, 3, n);
  const bool avx2 = vm::haveAvx2();
  forChunks(n, GRAIN, [&](long lo, long hi) {
    if (avx2) {
      vm::swigluAvx2(g + lo, u + lo, out + lo, hi - lo);
      return;
    }
    for (long i = lo; i < hi; i++) {
      const float sg = 1.f / (1.f + std::exp(-g[i]));
      out[i] = (g[i] * sg) * u[i];
    }
  });
  return info.Env().Undefined();
}

// swigluGrad(heap, g, u, dy, dg, du, n): du = dy·(g·s), dg = (dy·u)·(s·(1 + g·(1 − s))), s = sigmoid(g).
Napi::Value SwigluGrad(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long n = num(info, 6);
  const float* g = at<const float>(info, h, 1, n);
  const float* u = at<const float>(info, h, 2, n);
  const float* dy = at<const float>(info, h, 3, n);
  float* dg = at<float>(info, h, 4, n);
  float* du = at<float>(info, h, 5, n);
  const bool avx2 = vm::haveAvx2();
  forChunks(n, GRAIN, [&](long lo, long hi) {
    if (avx2) {
      vm::swigluGradAvx2(g + lo, u + lo, dy + lo, dg + lo, du + lo, hi - lo);
      return;
    }
    for (long i = lo; i < hi; i++) {
      const float sg = 1.f / (1.f + std::exp(-g[i]));
      du[i] = dy[i] * (g[i] * sg);
      dg[i] = (dy[i] * u[i]) * (sg * (1.f + g[i] * (1.f - sg)));
    }
  });
  return info.Env().Undefined();
}

// norm(heap, x, scale, bias, y, rows, cols, rms, eps): layer norm ((x−μ)·rstd·scale + bias) or
// RMS norm (x·rstd·scale) over each row; bias = −1 for none.
Napi::Value Norm(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long rows = num(info, 5), cols = num(info, 6);
  const bool rms = info[7].ToBoolean();
  const float eps = f32(info, 8);
  const float* x = at<const float>(info, h, 1, rows * cols);
  const float* scale = at<const float>(info, h, 2, cols);
  const bool hasBias = info[3].As<Napi::Number>().Int64Value() >= 0;
  const float* bias = hasBias ? at<const float>(info, h, 3, cols) : nullptr;
  float* y = at<float>(info, h, 4, rows * cols);
  forChunks(rows, rowGrain(cols), [&](long lo, long hi) {
    for (long r = lo; r < hi; r++) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      const float mu = rms ? 0.f : laneSum(xr, cols) / static_cast<float>(cols);
      const float var = laneSumSqDev(xr, mu, cols);
      const float rstd = 1.f / std::sqrt(var / static_cast<float>(cols) + eps);
      for (long j = 0; j < cols; j++) {
        const float v = (xr[j] - mu) * rstd * scale[j];
        yr[j] = bias ? v + bias[j] : v;
      }
    }
  });
  return info.Env().Undefined();
}

// normGrad(heap, x, scale, dy, dx, dscale, dbias, rows, cols, rms, eps); dbias = −1 for none.
// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·scale (RMS: no mean(g) term);
// dscale = Σ_rows dy·x̂, dbias = Σ_rows dy: row by row within a chunk, then chunk by chunk.
Napi::Value NormGrad(const Napi::CallbackInfo& info) {
  const Heap h = heapOf(info[0]);
  const long rows = num(info, 7), cols = num(info, 8);
  const bool rms = info[9].ToBoolean();
  const float eps = f32(info, 10);
  const float* x = at<const float>(info, h, 1, rows * cols);
  const float* scale = at<const float>(info, h, 2, cols);
  const float* dy = at<const float>(info, h, 3, rows * cols);
  float* dx = at<float>(info, h, 4, rows * cols);
  float* dscale = at<float>(info, h, 5, cols);
  const bool hasBias = info[6].As<Napi::Number>().Int64Value() >= 0;
  float* dbias = hasBias ? at<float>(info, h, 6, cols) : nullptr;
  // Per-chunk partial sums of dscale and dbias, added in chunk order below.
  const long grain = rowGrain(cols);
  const long chunks = (rows + grain - 1) / grain;
  std::vector<float> part(static_cast<size_t>(std::max<long>(chunks, 1) * 2 * cols), 0.f);
  forChunks(rows, grain, [&](long lo, long hi) {
    thread_local std::vector<float> xhat, g;
    xhat.resize(static_cast<size_t>(cols));
    g.resize(static_cast<size_t>(cols));
    float* ps = part.data() + (lo / grain) * 2 * cols;
    float* pb = ps + cols;
    for (long r = lo; r < hi; r++) {
      const float* xr = x + r * cols;
      const float* dyr = dy + r * cols;
      float* dxr = dx + r * cols;
      const float mu = rms ? 0.f : laneSum(xr, cols) / static_cast<float>(cols);
      const float var = laneSumSqDev(xr, mu, cols);
      const float rstd = 1.f / std::sqrt(var / static_cast<float>(cols) + eps);
      for (long j = 0; j < cols; j++) {
        xhat[j] = (xr[j] - mu) * rstd;
        g[j] = dyr[j] * scale[j];
        ps[j] += dyr[j] * xhat[j];
        pb[j] += dyr[j];
      }
      const float mg = rms ? 0.f : laneSum(g.data(), cols) / static_cast<float>(cols);
      const float mgx = laneDot(g.data(), xhat.data(), cols) / static_cast<float>(cols);
      for (long j = 0; j < cols; j++) dxr[j] = rstd * (g[j] - mg - xhat[j] * mgx);
    }
  });
  std::fill(dscale, dscale + cols, 0.f);
  if (dbias) std::fill(dbias, dbias + cols, 0.f);
  for (long c = 0; c < chunks; c++) {
    const float* ps = part.data() + c * 2 * cols;
    for (long j = 0; j < cols; j++) dscale[j] += ps[j];
    if (dbias)
      for (long j = 0; j < cols; j++) dbias[j] += ps[cols + j];
  }
  return info.Env().Undefined();
}

}  // namespace

void registerOps(Napi::Env env, Napi::Object exports) {
  exports.Set("adamw", Napi::Function::New(env, AdamW));
  exports.Set("sumSquares", Napi::Function::New(env, SumSquares));
  exports.Set("softmax", Napi::Function::New(env, Softmax));
  exports.Set("exp", Napi::Function::New(env, Exp));
  exports.Set("crossEntropy", Napi::Function::New(env, CrossEntropy));
  exports.Set("crossEntropyGrad", Napi::Function::New(env, CrossEntropyGrad));
  exports.Set("gelu", Napi::Function::New(env, Gelu));
  exports.Set("geluGrad", Napi::Function::New(env, GeluGrad));
  exports.Set("swiglu", Napi::Function::New(env, Swiglu));
  exports.Set("swigluGrad", Napi::Function::New(env, SwigluGrad));
  exports.Set("norm", Napi::Function::New(env, Norm));
  exports.Set("normGrad", Napi::Function::New(env, NormGrad));
}
