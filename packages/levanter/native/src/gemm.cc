// Batched SGEMM: the system OpenBLAS (called single-threaded, one call per tile) or a vendored
// packed-panel GEMM with AVX-512 / AVX2+FMA / scalar micro-kernels chosen at run time. The
// output is cut into tiles that depend only on the problem's shape; threads take tiles, so every
// element is computed by the same code in the same order whatever the thread count. The vendored
// kernels accumulate each element as one fused multiply-add chain over k in order (k blocks
// resume from the stored partial sums), so all three ISAs give the same bits.
#include "gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pool.h"

#ifdef LEVANTER_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

namespace {

Engine g_engine =
#ifdef LEVANTER_OPENBLAS
    Engine::OpenBlas;
#else
    Engine::Vendored;
#endif

bool cpuHas(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default:
      return true;
  }
}

Isa bestIsa() {
  if (cpuHas(Isa::Avx512)) return Isa::Avx512;
  if (cpuHas(Isa::Avx2)) return Isa::Avx2;
  return Isa::Scalar;
}

Isa g_isa = bestIsa();

constexpr int KC = 256;
constexpr int MC = 96;  // multiple of every MR (4, 6)
constexpr int NC = 512; // multiple of every NR (8, 16, 32)

// ---- micro-kernels: C[MR x NR] (row stride ldc) = (first ? 0 : C) + Ap·Bp over kb -----------

template <int MR, int NR>
void ukrScalar(int kb, const float* ap, const float* bp, float* c, long ldc, bool first) {
  float acc[MR][NR];
  for (int r = 0; r < MR; r++)
    for (int j = 0; j < NR; j++) acc[r][j] = first ? 0.f : c[r * ldc + j];
  for (int p = 0; p < kb; p++)
    for (int r = 0; r < MR; r++) {
      const float a = ap[p * MR + r];
      for (int j = 0; j < NR; j++) acc[r][j] = std::fma(a, bp[p * NR + j], acc[r][j]);
    }
  for (int r = 0; r < MR; r++)
    for (int j = 0; j < NR; j++) c[r * ldc + j] = acc[r][j];
}

// Twelve named accumulators (arrays of vectors get spilled to the stack by GCC).
#define LEV_UKR_BODY(VEC, ZERO, LOADU, LOAD, BCAST, FMA, STOREU, W)                                      \
  VEC c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;                                        \
  if (first) {                                                                                           \
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = ZERO();                      \
  } else {                                                                                               \
    c00 = LOADU(c + 0 * ldc); c01 = LOADU(c + 0 * ldc + W);                                              \
    c10 = LOADU(c + 1 * ldc); c11 = LOADU(c + 1 * ldc + W);                                              \
    c20 = LOADU(c + 2 * ldc); c21 = LOADU(c + 2 * ldc + W);                                              \
    c30 = LOADU(c + 3 * ldc); c31 = LOADU(c + 3 * ldc + W);                                              \
    c40 = LOADU(c + 4 * ldc); c41 = LOADU(c + 4 * ldc + W);                                              \
    c50 = LOADU(c + 5 * ldc); c51 = LOADU(c + 5 * ldc + W);                                              \
  }                                                                                                      \
  for (int p = 0; p < kb; p++) {                                                                         \
    const VEC b0 = LOAD(bp + p * 2 * W);                                                                 \
    const VEC b1 = LOAD(bp + p * 2 * W + W);                                                             \
    const float* a = ap + p * 6;                                                                         \
    VEC av = BCAST(a + 0); c00 = FMA(av, b0, c00); c01 = FMA(av, b1, c01);                               \
    av = BCAST(a + 1); c10 = FMA(av, b0, c10); c11 = FMA(av, b1, c11);                                   \
    av = BCAST(a + 2); c20 = FMA(av, b0, c20); c21 = FMA(av, b1, c21);                                   \
    av = BCAST(a + 3); c30 = FMA(av, b0, c30); c31 = FMA(av, b1, c31);                                   \
    av = BCAST(a + 4); c40 = FMA(av, b0, c40); c41 = FMA(av, b1, c41);                                   \
    av = BCAST(a + 5); c50 = FMA(av, b0, c50); c51 = FMA(av, b1, c51);                                   \
  }                                                                                                      \
  STOREU(c + 0 * ldc, c00); STOREU(c + 0 * ldc + W, c01);                                                \
  STOREU(c + 1 * ldc, c10); STOREU(c + 1 * ldc + W, c11);                                                \
  STOREU(c + 2 * ldc, c20); STOREU(c + 2 * ldc + W, c21);                                                \
  STOREU(c + 3 * ldc, c30); STOREU(c + 3 * ldc + W, c31);                                                \
  STOREU(c + 4 * ldc, c40); STOREU(c + 4 * ldc + W, c41);                                                \
  STOREU(c + 5 * ldc, c50); STOREU(c + 5 * ldc + W, c51);

__attribute__((target("avx2,fma"))) void ukrAvx2(int kb, const float* ap, const float* bp, float* c, long ldc,
                                                  bool first) {
  LEV_UKR_BODY(__m256, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_load_ps, _mm256_broadcast_ss, _mm256_fmadd_ps,
               _mm256_storeu_ps, 8)
}

static inline __attribute__((target("avx512f,fma"))) __m512 bcast512(const float* a) { return _mm512_set1_ps(*a); }

__attribute__((target("avx512f,fma"))) void ukrAvx512(int kb, const float* ap, const float* bp, float* c, long ldc,
                                                       bool first) {
  LEV_UKR_BODY(__m512, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_load_ps, bcast512, _mm512_fmadd_ps,
               _mm512_storeu_ps, 16)
}
#undef LEV_UKR_BODY

using Ukr = void (*)(int, const float*, const float*, float*, long, bool);

struct Kernel {
  int mr, nr;
  Ukr fn;
};

Kernel kernelFor(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return {6, 32, ukrAvx512};
    case Isa::Avx2:
      return {6, 16, ukrAvx2};
    default:
      return {4, 8, ukrScalar<4, 8>};
  }
}

// ---- one view of an operand: element (r, c) at base[r * rs + c * cs] -------------------------

struct View {
  const float* base;
  long rs, cs;
  float at(long r, long c) const { return base[r * rs + c * cs]; }
};

struct Buffers {
  float* a = nullptr;
  float* b = nullptr;
  size_t na = 0, nb = 0;
  static float* grow(float* p, size_t& have, size_t want) {
    if (want <= have) return p;
    std::free(p);
    have = (want + 15) & ~size_t(15);
    return static_cast<float*>(std::aligned_alloc(64, have * sizeof(float)));
  }
  ~Buffers() {
    std::free(a);
    std::free(b);
  }
};
thread_local Buffers t_buf;

// Packs rows [i0, i0+mc) × cols [p0, p0+kb) of A into MR-row panels (zero padded).
void packA(const View& A, long i0, long mc, long p0, int kb, int mr, float* dst) {
  for (long ir = 0; ir < mc; ir += mr) {
    const long rows = std::min<long>(mr, mc - ir);
    for (int p = 0; p < kb; p++) {
      for (long r = 0; r < rows; r++) dst[p * mr + r] = A.at(i0 + ir + r, p0 + p);
      for (long r = rows; r < mr; r++) dst[p * mr + r] = 0.f;
    }
    dst += static_cast<long>(mr) * kb;
  }
}

// Packs rows [p0, p0+kb) × cols [j0, j0+nc) of B into NR-column panels (zero padded).
void packB(const View& B, long p0, int kb, long j0, long nc, int nr, float* dst) {
  for (long jr = 0; jr < nc; jr += nr) {
    const long cols = std::min<long>(nr, nc - jr);
    for (int p = 0; p < kb; p++) {
      float* d = dst + p * nr;
      if (B.cs == 1) {
        std::memcpy(d, B.base + (p0 + p) * B.rs + j0 + jr, cols * sizeof(float));
      } else {
        for (long j = 0; j < cols; j++) d[j] = B.at(p0 + p, j0 + jr + j);
      }
      for (long j = cols; j < nr; j++) d[j] = 0.f;
    }
    dst += static_cast<long>(nr) * kb;
  }
}

// C tile [mt x nt] at c (row stride ldc) = A[i0.., :]·B[:, j0..] with the vendored kernels.
void vendoredTile(const View& A, const View& B, float* c, long ldc, long i0, long mt, long j0, long nt, long k,
                  const Kernel& kr) {
  const int mr = kr.mr, nr = kr.nr;
  alignas(64) float tmp[6 * 32];
  for (long jc = 0; jc < nt; jc += NC) {
    const long nc = std::min<long>(NC, nt - jc);
    const long ncPad = (nc + nr - 1) / nr * nr;
    for (long pc = 0; pc < k; pc += KC) {
      const int kb = static_cast<int>(std::min<long>(KC, k - pc));
      const bool first = pc == 0;
      t_buf.b = Buffers::grow(t_buf.b, t_buf.nb, static_cast<size_t>(ncPad) * kb);
      packB(B, pc, kb, j0 + jc, nc, nr, t_buf.b);
      for (long ic = 0; ic < mt; ic += MC) {
        const long mc = std::min<long>(MC, mt - ic);
        const long mcPad = (mc + mr - 1) / mr * mr;
        t_buf.a = Buffers::grow(t_buf.a, t_buf.na, static_cast<size_t>(mcPad) * kb);
        packA(A, i0 + ic, mc, pc, kb, mr, t_buf.a);
        for (long jr = 0; jr < nc; jr += nr) {
          const long cols = std::min<long>(nr, nc - jr);
          const float* bp = t_buf.b + (jr / nr) * nr * kb;
          for (long ir = 0; ir < mc; ir += mr) {
            const long rows = std::min<long>(mr, mc - ir);
            const float* ap = t_buf.a + (ir / mr) * mr * kb;
            float* cp = c + (ic + ir) * ldc + jc + jr;
            if (rows == mr && cols == nr) {
              kr.fn(kb, ap, bp, cp, ldc, first);
            } else {
              if (!first)
                for (long r = 0; r < rows; r++) std::memcpy(tmp + r * nr, cp + r * ldc, cols * sizeof(float));
              kr.fn(kb, ap, bp, tmp, nr, first);
              for (long r = 0; r < rows; r++) std::memcpy(cp + r * ldc, tmp + r * nr, cols * sizeof(float));
            }
          }
        }
      }
    }
  }
}

#ifdef LEVANTER_OPENBLAS
// The tile [i0, i0+mt) × [j0, j0+nt) of A'·B' through cblas_sgemm (row-major, leading
// dimensions of the stored matrices: A is [m, k] or, transposed, [k, m]; B is [k, n] or [n, k]).
void openblasTile(const float* a, const float* b, bool ta, bool tb, long m, long n, long k, float* c, long ldc,
                  long i0, long mt, long j0, long nt) {
  const float* pa = ta ? a + i0 : a + i0 * k;
  const float* pb = tb ? b + j0 * k : b + j0;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(mt),
              static_cast<int>(nt), static_cast<int>(k), 1.f, pa, static_cast<int>(ta ? m : k), pb,
              static_cast<int>(tb ? k : n), 0.f, c, static_cast<int>(ldc));
}
#endif

inline float activate(float v, Act act, float alpha) {
  switch (act) {
    case Act::Relu:
      return v > 0.f ? v : 0.f;
    case Act::Relu6:
      return std::min(std::max(v, 0.f), 6.f);
    case Act::LeakyRelu:
      return v < 0.f ? alpha * v : v;
    case Act::Sigmoid:
      return 1.f / (1.f + std::exp(-v));
    case Act::Elu:
      return v >= 0.f ? v : std::expm1(v);
    default:
      return v;
  }
}

struct Tiling {
  long mt, nt, mTiles, nTiles;
};

// Depends only on the shape: the same tiles for every thread count. (It must: OpenBLAS gives other
// bits for a product computed whole than in row or column tiles — measured on the model's shapes —
// so a tiling that followed the thread count would change results with it.)
Tiling tiling(long batches, long m, long n) {
  Tiling t{m, n, 1, 1};
  // Up to 4 tiles per product (each tile repacks its operands, so fewer is cheaper; 4 keep up
  // to 4 threads busy), none under 128 rows or 256 columns.
  if (batches < 4) {
    const long parts = 4 / std::max<long>(batches, 1);
    if (m >= 256) {
      t.mt = std::max<long>(128, (m / parts + 15) / 16 * 16);
    } else if (n >= 512) {
      t.nt = std::max<long>(256, (n / parts + 31) / 32 * 32);
    }
  }
  t.mTiles = (m + t.mt - 1) / t.mt;
  t.nTiles = (n + t.nt - 1) / t.nt;
  return t;
}

constexpr double POOL_MIN_FLOPS = 1 << 20;
// Products smaller than this (per batch, e.g. attention's 64×64×32) run on the vendored kernels
// even when OpenBLAS is the engine: its per-call overhead would dominate. The choice depends on
// the shape only, so it never changes the bits between runs or thread counts.
constexpr long OPENBLAS_MIN_MNK = 1L << 20;

}  // namespace

bool haveOpenBlas() {
#ifdef LEVANTER_OPENBLAS
  return true;
#else
  return false;
#endif
}

Engine engine() { return g_engine; }
void setEngine(Engine e) { g_engine = (e == Engine::OpenBlas && !haveOpenBlas()) ? Engine::Vendored : e; }
Isa activeIsa() { return g_isa; }
bool setIsa(Isa isa) {
  if (isa == Isa::Auto) isa = bestIsa();
  if (!cpuHas(isa)) return false;
  g_isa = isa;
  return true;
}
const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx2:
      return "avx2";
    case Isa::Scalar:
      return "scalar";
    default:
      return "auto";
  }
}

void gemm(const GemmProblem& p, Pool& pool) {
  const long m = p.m, n = p.n, k = p.k;
  if (p.batches <= 0 || m <= 0 || n <= 0) return;
#ifdef LEVANTER_OPENBLAS
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
#endif
  const Tiling t = tiling(p.batches, m, n);
  const long perBatch = t.mTiles * t.nTiles;
  const Kernel kr = kernelFor(g_isa);
  const Engine eng = g_engine;
  auto item = [&](long idx) {
    const long b = idx / perBatch;
    const long r = idx % perBatch;
    const long i0 = (r / t.nTiles) * t.mt;
    const long j0 = (r % t.nTiles) * t.nt;
    const long mt = std::min(t.mt, m - i0);
    const long nt = std::min(t.nt, n - j0);
    const View A{p.a + b * p.strideA, p.transA ? 1 : k, p.transA ? m : 1};
    const View B{p.b + b * p.strideB, p.transB ? 1 : n, p.transB ? k : 1};
    float* c = p.c + b * m * n + i0 * n + j0;
    if (k == 0) {
      for (long i = 0; i < mt; i++) std::memset(c + i * n, 0, nt * sizeof(float));
    } else if (eng == Engine::OpenBlas && m * n * k >= OPENBLAS_MIN_MNK) {
#ifdef LEVANTER_OPENBLAS
      openblasTile(p.a + b * p.strideA, p.b + b * p.strideB, p.transA, p.transB, m, n, k, c, n, i0, mt, j0, nt);
#endif
    } else {
      vendoredTile(A, B, c, n, i0, mt, j0, nt, k, kr);
    }
    if (p.bias || p.act != Act::Linear) {
      const float* bias = p.bias;
      for (long i = 0; i < mt; i++) {
        float* row = c + i * n;
        const float* brow = nullptr;
        if (bias) {
          if (p.biasMode == 0) brow = bias + j0;
          else if (p.biasMode == 1) brow = bias + (i0 + i) * n + j0;
          else brow = bias + b * p.biasStride + (i0 + i) * n + j0;
        }
        for (long j = 0; j < nt; j++) {
          const float v = brow ? row[j] + brow[j] : row[j];
          row[j] = activate(v, p.act, p.alpha);
        }
      }
    }
  };
  const long items = p.batches * perBatch;
  const double flops = 2.0 * p.batches * m * n * k;
  if (flops < POOL_MIN_FLOPS) {
    for (long i = 0; i < items; i++) item(i);
  } else {
    pool.run(items, item);
  }
}
