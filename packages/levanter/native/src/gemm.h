// The batched SGEMM behind MatMul / BatchMatMul / _FusedMatMul: C[b] = act(A'[b]·B'[b] + bias).
#pragma once
#include <cstdint>

class Pool;

// Epilogue activations, as tfjs' _FusedMatMul names them.
enum class Act : int { Linear = 0, Relu = 1, Relu6 = 2, LeakyRelu = 3, Sigmoid = 4, Elu = 5 };

// Which GEMM engine runs the products.
enum class Engine : int { OpenBlas = 0, Vendored = 1 };

// Which micro-kernel the vendored GEMM uses (Auto: the best the CPU supports).
enum class Isa : int { Auto = 0, Scalar = 1, Avx2 = 2, Avx512 = 3 };

struct GemmProblem {
  const float* a;
  const float* b;
  float* c;
  long batches, m, n, k;
  bool transA, transB;
  long strideA, strideB;  // elements between batches (0: broadcast)
  const float* bias;      // nullptr: none
  int biasMode;           // 0: per column (n values), 1: full [m, n] per batch, 2: full per batch with its own stride
  long biasStride;        // elements between batches of a mode-2 bias
  Act act;
  float alpha;  // LeakyRelu's slope
};

bool haveOpenBlas();
Engine engine();
void setEngine(Engine e);
Isa activeIsa();
// Sets the vendored micro-kernel; returns false when the CPU lacks it.
bool setIsa(Isa isa);
const char* isaName(Isa isa);
void gemm(const GemmProblem& p, Pool& pool);
