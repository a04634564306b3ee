// Vectorised float32 exp for the AVX2 paths of the elementwise kernels (Cephes-style: range
// reduction by ln 2 and a degree-6 polynomial, ~2 ulp), plus loops built on it. Each has a scalar
// twin; kernels pick one per call from the CPU's features, never from the thread count.
#pragma once
#include <immintrin.h>

#include <cmath>

namespace vm {

inline bool haveAvx2() {
  static const bool ok = (__builtin_cpu_init(), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  return ok;
}

__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.3762626647949f), lo = _mm256_set1_ps(-87.3365447504f);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  const __m256 fx = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500E-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
  const __m256 x2 = _mm256_mul_ps(x, x);
  y = _mm256_fmadd_ps(y, x2, _mm256_add_ps(x, _mm256_set1_ps(1.f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

constexpr float GELU_C2 = 1.5957691216057308f;  // 2·sqrt(2/π)
constexpr float GELU_A = 0.044715f;

// out = x·sigmoid(c2·(x + a·x³))
__attribute__((target("avx2,fma"))) inline void geluAvx2(const float* x, float* out, long n) {
  const __m256 c2 = _mm256_set1_ps(GELU_C2), a = _mm256_set1_ps(GELU_A), one = _mm256_set1_ps(1.f);
  long i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    const __m256 u = _mm256_mul_ps(c2, _mm256_fmadd_ps(_mm256_mul_ps(a, xv), _mm256_mul_ps(xv, xv), xv));
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), u));
    _mm256_storeu_ps(out + i, _mm256_div_ps(xv, _mm256_add_ps(one, e)));
  }
  for (; i < n; i++) {
    const float xi = x[i];
    const float u = GELU_C2 * (xi + GELU_A * xi * xi * xi);
    out[i] = xi / (1.f + std::exp(-u));
  }
}

// dx = dy·(s + x·s·(1−s)·c2·(1 + 3a·x²)), s = sigmoid(u)
__attribute__((target("avx2,fma"))) inline void geluGradAvx2(const float* x, const float* dy, float* dx, long n) {
  const __m256 c2 = _mm256_set1_ps(GELU_C2), a = _mm256_set1_ps(GELU_A), a3 = _mm256_set1_ps(3.f * GELU_A), one = _mm256_set1_ps(1.f);
  long i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    const __m256 x2 = _mm256_mul_ps(xv, xv);
    const __m256 u = _mm256_mul_ps(c2, _mm256_fmadd_ps(_mm256_mul_ps(a, xv), x2, xv));
    const __m256 s = _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), u))));
    const __m256 du = _mm256_mul_ps(c2, _mm256_fmadd_ps(a3, x2, one));
    const __m256 g = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_mul_ps(xv, s), _mm256_sub_ps(one, s)), du, s);
    _mm256_storeu_ps(dx + i, _mm256_mul_ps(_mm256_loadu_ps(dy + i), g));
  }
  for (; i < n; i++) {
    const float xi = x[i];
    const float u = GELU_C2 * (xi + GELU_A * xi * xi * xi);
    const float sg = 1.f / (1.f + std::exp(-u));
    dx[i] = dy[i] * (sg + xi * sg * (1.f - sg) * GELU_C2 * (1.f + 3.f * GELU_A * xi * xi));
  }
}

// SwiGLU's product: out = (g·s)·u, s = sigmoid(g) = 1/(1 + exp(−g)).
__attribute__((target("avx2,fma"))) inline void swigluAvx2(const float* g, const float* u, float* out, long n) {
  const __m256 one = _mm256_set1_ps(1.f);
  long i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 s = _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), gv))));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(gv, s), _mm256_loadu_ps(u + i)));
  }
  for (; i < n; i++) {
    const float s = 1.f / (1.f + std::exp(-g[i]));
    out[i] = (g[i] * s) * u[i];
  }
}

// Its gradient: du = dy·(g·s), dg = (dy·u)·(s·(1 + g·(1 − s))).
__attribute__((target("avx2,fma"))) inline void swigluGradAvx2(const float* g, const float* u, const float* dy, float* dg, float* du, long n) {
  const __m256 one = _mm256_set1_ps(1.f);
  long i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 dyv = _mm256_loadu_ps(dy + i);
    const __m256 s = _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), gv))));
    _mm256_storeu_ps(du + i, _mm256_mul_ps(dyv, _mm256_mul_ps(gv, s)));
    const __m256 ds = _mm256_mul_ps(s, _mm256_add_ps(one, _mm256_mul_ps(gv, _mm256_sub_ps(one, s))));
    _mm256_storeu_ps(dg + i, _mm256_mul_ps(_mm256_mul_ps(dyv, _mm256_loadu_ps(u + i)), ds));
  }
  for (; i < n; i++) {
    const float s = 1.f / (1.f + std::exp(-g[i]));
    du[i] = dy[i] * (g[i] * s);
    dg[i] = (dy[i] * u[i]) * (s * (1.f + g[i] * (1.f - s)));
  }
}

// out[i] = exp(x[i] − shift); returns Σ out (8 lanes, then lanes summed in a fixed order).
__attribute__((target("avx2,fma"))) inline float expShiftSumAvx2(const float* x, float shift, float* out, long n) {
  const __m256 sh = _mm256_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  long i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), sh));
    _mm256_storeu_ps(out + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float s = 0.f;
  for (int j = 0; j < 8; j++) s += lanes[j];
  for (; i < n; i++) {
    out[i] = std::exp(x[i] - shift);
    s += out[i];
  }
  return s;
}

// Σ exp(x[i] − shift), nothing stored.
__attribute__((target("avx2,fma"))) inline float expShiftSumOnlyAvx2(const float* x, float shift, long n) {
  const __m256 sh = _mm256_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  long i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), sh)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float s = 0.f;
  for (int j = 0; j < 8; j++) s += lanes[j];
  for (; i < n; i++) s += std::exp(x[i] - shift);
  return s;
}

}  // namespace vm
