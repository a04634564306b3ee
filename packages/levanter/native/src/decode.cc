// The serving engine's whole forward step on the CPU for a batch of ragged rows (decode tokens and
// prompt chunks of many sequences), against each sequence's preallocated KV buffer: embeddings,
// norms, projections, rotary positions, attention, activations, residuals and the LM head in one
// call. decodeCreate copies a model's weights once; decodeStep runs a step. Every row's values are
// computed by the same arithmetic whatever the other rows are (each projection output sums its
// inner products in order, no FMA contraction), so a sequence decodes to the same bits alone and
// in any batch; and the AVX2 and the baseline builds of the projection loop give the same bits.
#include "decode.h"

#include "gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

// 8 float lanes (AVX2 registers where the target has them; the helpers using them are always inlined).
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8 __attribute__((vector_size(32)));

struct Lin {
  // W [k, n] as 16-column panels (panel q at q·16·k: [k][16]) and then each of the n % 16 last
  // columns contiguous over k: a product streams it in order.
  std::vector<float> p;
  std::vector<float> b;  // [n] or empty
  long k = 0, n = 0;
};

// Packs a row-major W [k, n] into Lin::p's layout.
std::vector<float> packLin(const float* w, long k, long n) {
  std::vector<float> p(static_cast<size_t>(k * n));
  const long full = n - n % 16;
  for (long j0 = 0; j0 < full; j0 += 16)
    for (long kk = 0; kk < k; kk++)
      for (long c = 0; c < 16; c++) p[j0 * k + kk * 16 + c] = w[kk * n + j0 + c];
  for (long j = full; j < n; j++)
    for (long kk = 0; kk < k; kk++) p[j * k + kk] = w[kk * n + j];
  return p;
}

struct NormW {
  std::vector<float> s, b;
};

struct LayerW {
  NormW attnNorm, mlpNorm;
  Lin qkv, out, gate, up, down;
  bool hasGate = false;
};

struct Model {
  // H query heads, Hkv key/value heads (query head h reads kv head h / (H / Hkv)), dh each.
  long L = 0, D = 0, H = 0, Hkv = 0, dh = 0, V = 0, seqLen = 0;
  bool rms = false, swiglu = false;
  double eps = 1e-5;
  std::vector<float> tok, pos, cos, sin;
  std::vector<LayerW> layers;
  NormW finalNorm;
  Lin head;
  // Scratch, grown to the largest step.
  std::vector<float> x, h, qkv, att, y, up, g, hx;
  std::vector<float> scores;
};

// What JS holds: the model until decodeFree, then nothing.
struct Handle {
  std::unique_ptr<Model> model;
};

[[noreturn]] void fail(Napi::Env env, const std::string& what) { throw Napi::TypeError::New(env, "levanter native decode: " + what); }

std::vector<float> floats(Napi::Env env, const Napi::Value& v, size_t want, const std::string& name) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) fail(env, name + ": expected a Float32Array");
  auto a = v.As<Napi::Float32Array>();
  if (want != 0 && a.ElementLength() != want) fail(env, name + ": expected " + std::to_string(want) + " values, got " + std::to_string(a.ElementLength()));
  return std::vector<float>(a.Data(), a.Data() + a.ElementLength());
}

std::vector<float> optFloats(Napi::Env env, const Napi::Object& o, const char* key, size_t want, const std::string& name) {
  if (!o.Has(key) || o.Get(key).IsUndefined() || o.Get(key).IsNull()) return {};
  return floats(env, o.Get(key), want, name + "." + key);
}

long intOf(Napi::Env env, const Napi::Object& o, const char* key) {
  if (!o.Get(key).IsNumber()) fail(env, std::string(key) + ": expected a number");
  return static_cast<long>(o.Get(key).As<Napi::Number>().Int64Value());
}

Lin linOf(Napi::Env env, const Napi::Value& v, long k, long n, const std::string& name) {
  if (!v.IsObject()) fail(env, name + ": expected { w, b? }");
  auto o = v.As<Napi::Object>();
  Lin l;
  l.k = k;
  l.n = n;
  const std::vector<float> w = floats(env, o.Get("w"), static_cast<size_t>(k * n), name + ".w");
  l.p = packLin(w.data(), k, n);
  l.b = optFloats(env, o, "b", static_cast<size_t>(n), name);
  return l;
}

NormW normOf(Napi::Env env, const Napi::Value& v, long d, const std::string& name) {
  if (!v.IsObject()) fail(env, name + ": expected { s, b? }");
  auto o = v.As<Napi::Object>();
  NormW nw;
  nw.s = floats(env, o.Get("s"), static_cast<size_t>(d), name + ".s");
  nw.b = optFloats(env, o, "b", static_cast<size_t>(d), name);
  return nw;
}

// ---- projections: y[m, n] = x[m, k] · w[k, n] (+ b) --------------------------------------------

inline __attribute__((always_inline)) v8 load8(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline __attribute__((always_inline)) void store8(float* p, v8 v) { std::memcpy(p, &v, sizeof v); }

// Rows i0..i0+R of one 16-column panel (`w`: k × 16, contiguous): each output is
// ((0 + x0·w0) + x1·w1) + … then + b.
template <int R>
inline __attribute__((always_inline)) void tile16(const float* x, long k, const float* w, const float* b, float* y, long n) {
  v8 a0[R], a1[R];
  for (int r = 0; r < R; r++) a0[r] = a1[r] = v8{};
  for (long kk = 0; kk < k; kk++) {
    const v8 w0 = load8(w + kk * 16);
    const v8 w1 = load8(w + kk * 16 + 8);
    for (int r = 0; r < R; r++) {
      const float xs = x[r * k + kk];
      a0[r] += xs * w0;
      a1[r] += xs * w1;
    }
  }
  for (int r = 0; r < R; r++) {
    v8 o0 = a0[r], o1 = a1[r];
    if (b) {
      o0 += load8(b);
      o1 += load8(b + 8);
    }
    store8(y + r * n, o0);
    store8(y + r * n + 8, o1);
  }
}

// y[m, n] = x[m, k] · W (+ b), W packed by packLin: blocks of 8 rows (kept in L1), and for each
// the panels walked in order, each panel reused by the block's row tiles.
inline __attribute__((always_inline)) void gemmBody(const float* x, long m, const Lin& l, float* y) {
  const long k = l.k, n = l.n, full = n - n % 16;
  const float* b = l.b.empty() ? nullptr : l.b.data();
  for (long i0 = 0; i0 < m; i0 += 8) {
    const long mb = std::min<long>(8, m - i0);
    for (long j0 = 0; j0 < full; j0 += 16) {
      const float* w = l.p.data() + j0 * k;
      const float* bj = b ? b + j0 : nullptr;
      long i = i0;
      for (; i + 4 <= i0 + mb; i += 4) tile16<4>(x + i * k, k, w, bj, y + i * n + j0, n);
      switch (i0 + mb - i) {
        case 3: tile16<3>(x + i * k, k, w, bj, y + i * n + j0, n); break;
        case 2: tile16<2>(x + i * k, k, w, bj, y + i * n + j0, n); break;
        case 1: tile16<1>(x + i * k, k, w, bj, y + i * n + j0, n); break;
        default: break;
      }
    }
  }
  for (long j = full; j < n; j++) {
    const float* w = l.p.data() + j * k;  // the tail columns, each contiguous over k
    for (long i = 0; i < m; i++) {
      float acc = 0;
      for (long kk = 0; kk < k; kk++) acc += x[i * k + kk] * w[kk];
      y[i * n + j] = b ? acc + b[j] : acc;
    }
  }
}

// AVX2 unless the addon's ISA is set to scalar (setIsa; tests compare the two builds' bits).
bool useAvx2() {
  static const bool cpu = __builtin_cpu_supports("avx2");
  return cpu && activeIsa() != Isa::Scalar;
}

inline __attribute__((always_inline)) void linear(const Lin& l, const float* x, long m, float* y) { gemmBody(x, m, l, y); }


// q · k over dh values: 8 lanes, then a fixed pairwise sum (the same bits in every build).
inline __attribute__((always_inline)) float dot(const float* q, const float* k, long dh) {
  v8 a = v8{};
  long j = 0;
  for (; j + 8 <= dh; j += 8) a += load8(q + j) * load8(k + j);
  float s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  for (; j < dh; j++) s += q[j] * k[j];
  return s;
}

// out[0..dh) = Σ_t (w[t]·inv) · v[t·dh ..], t in order.
inline __attribute__((always_inline)) void axpyRows(const float* w, float inv, const float* v, long len, long dh, float* out) {
  long j = 0;
  for (; j + 8 <= dh; j += 8) {
    v8 a = v8{};
    for (long t = 0; t < len; t++) a += (w[t] * inv) * load8(v + t * dh + j);
    store8(out + j, a);
  }
  for (; j < dh; j++) {
    float a = 0;
    for (long t = 0; t < len; t++) a += (w[t] * inv) * v[t * dh + j];
    out[j] = a;
  }
}

// exp on float32 (Cephes' expf: range reduction by ln 2, a degree-5 polynomial, 2^n from the
// exponent bits; ≤ 2 ulp, arguments clamped to [-87.3, 88.3]), as 8 lanes and as a scalar with
// the same operations in the same order: the same bits whichever computes an element.
typedef int32_t vi8 __attribute__((vector_size(32)));
constexpr float EXP_HI = 88.3f, EXP_LO = -87.3f, LOG2E = 1.44269504088896341f, LN2_HI = 0.693359375f, LN2_LO = -2.12194440e-4f;
constexpr float EP0 = 1.9875691500e-4f, EP1 = 1.3981999507e-3f, EP2 = 8.3334519073e-3f, EP3 = 4.1665795894e-2f, EP4 = 1.6666665459e-1f, EP5 = 5.0000001201e-1f;

inline __attribute__((always_inline)) v8 expV(v8 x) {
  const v8 lo = v8{} + EXP_LO, hi = v8{} + EXP_HI;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  const v8 fx = x * LOG2E + 0.5f;
  vi8 n = __builtin_convertvector(fx, vi8);
  n = n + (__builtin_convertvector(n, v8) > fx);  // floor: the mask is -1 where truncation rounded up
  const v8 nf = __builtin_convertvector(n, v8);
  v8 r = x - nf * LN2_HI;
  r = r - nf * LN2_LO;
  v8 p = EP0 + v8{};
  p = p * r + EP1;
  p = p * r + EP2;
  p = p * r + EP3;
  p = p * r + EP4;
  p = p * r + EP5;
  const v8 y = (p * (r * r) + r) + 1.0f;
  const vi8 bits = (n + 127) << 23;
  v8 scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

inline __attribute__((always_inline)) float expS(float x) {
  x = x < EXP_LO ? EXP_LO : x;
  x = x > EXP_HI ? EXP_HI : x;
  const float fx = x * LOG2E + 0.5f;
  int32_t n = static_cast<int32_t>(fx);
  if (static_cast<float>(n) > fx) n -= 1;
  const float nf = static_cast<float>(n);
  float r = x - nf * LN2_HI;
  r = r - nf * LN2_LO;
  float p = EP0;
  p = p * r + EP1;
  p = p * r + EP2;
  p = p * r + EP3;
  p = p * r + EP4;
  p = p * r + EP5;
  const float y = (p * (r * r) + r) + 1.0f;
  const int32_t bits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

// GELU (tanh form as x·sigmoid(2u)) and SwiGLU's g·sigmoid(g)·up, element by element.
constexpr float GELU_C2 = 1.5957691216057308f;  // 2·sqrt(2/π)
inline __attribute__((always_inline)) v8 geluV(v8 z) { return z / (1.0f + expV(-GELU_C2 * (z + ((0.044715f * z) * z) * z))); }
inline __attribute__((always_inline)) float geluS(float z) { return z / (1.0f + expS(-GELU_C2 * (z + ((0.044715f * z) * z) * z))); }

// ---- the rest, row by row (norm statistics in float64) ------------------------------

inline __attribute__((always_inline)) void norm(const Model& md, const NormW& nw, const float* x, long m, float* y) {
  const long d = md.D;
  for (long i = 0; i < m; i++) {
    const float* xi = x + i * d;
    double mean = 0;
    if (!md.rms) {
      for (long j = 0; j < d; j++) mean += xi[j];
      mean /= static_cast<double>(d);
    }
    double sq = 0;
    for (long j = 0; j < d; j++) {
      const double c = xi[j] - mean;
      sq += c * c;
    }
    const double inv = 1 / std::sqrt(sq / static_cast<double>(d) + md.eps);
    for (long j = 0; j < d; j++) y[i * d + j] = static_cast<float>((xi[j] - mean) * inv * nw.s[j] + (nw.b.empty() ? 0.0 : nw.b[j]));
  }
}

// Rotate-half RoPE in place on the heads·dh values at `v` for position `p`.
inline __attribute__((always_inline)) void rotate(const Model& md, float* v, long p, long heads) {
  const long half = md.dh / 2;
  for (long hh = 0; hh < heads; hh++) {
    float* b = v + hh * md.dh;
    for (long j = 0; j < half; j++) {
      const float c = md.cos[p * half + j], s = md.sin[p * half + j];
      const float x1 = b[j], x2 = b[j + half];
      b[j] = x1 * c - x2 * s;
      b[j + half] = x2 * c + x1 * s;
    }
  }
}

struct Row {
  float* kv;
  long cap;
  long pos;
};

inline long kvOffset(const Model& md, const Row& r, long l, int which, long hh) { return ((l * 2 + which) * md.Hkv + hh) * r.cap * md.dh; }

// Writes every row's k, v at its position (all rows first: a prompt chunk's rows see each other),
// then each row's query attends to positions 0..pos of its sequence. qkv: [m, (H + 2·Hkv)·dh]
// (query, key, value heads side by side); att: [m, H·dh].
inline __attribute__((always_inline)) void attend(Model& md, long l, const std::vector<Row>& rows, float* qkv, float* att) {
  const long dh = md.dh, m = static_cast<long>(rows.size()), dq = md.H * dh, ld = (md.H + 2 * md.Hkv) * dh, g = md.H / md.Hkv;
  for (long i = 0; i < m; i++) {
    const Row& r = rows[i];
    float* q = qkv + i * ld;
    float* k = q + dq;
    const float* v = k + md.Hkv * dh;
    if (!md.cos.empty()) {
      rotate(md, q, r.pos, md.H);
      rotate(md, k, r.pos, md.Hkv);
    }
    for (long hh = 0; hh < md.Hkv; hh++) {
      std::memcpy(r.kv + kvOffset(md, r, l, 0, hh) + r.pos * dh, k + hh * dh, dh * sizeof(float));
      std::memcpy(r.kv + kvOffset(md, r, l, 1, hh) + r.pos * dh, v + hh * dh, dh * sizeof(float));
    }
  }
  const float scale = static_cast<float>(1 / std::sqrt(static_cast<double>(dh)));
  for (long i = 0; i < m; i++) {
    const Row& r = rows[i];
    const long len = r.pos + 1;
    if (static_cast<long>(md.scores.size()) < len) md.scores.resize(len);
    float* sc = md.scores.data();
    for (long hh = 0; hh < md.H; hh++) {
      const float* q = qkv + i * ld + hh * dh;
      const float* K = r.kv + kvOffset(md, r, l, 0, hh / g);
      const float* Vv = r.kv + kvOffset(md, r, l, 1, hh / g);
      float max = -INFINITY;
      for (long t = 0; t < len; t++) {
        sc[t] = dot(q, K + t * dh, dh) * scale;
        if (sc[t] > max) max = sc[t];
      }
      long t = 0;
      for (; t + 8 <= len; t += 8) store8(sc + t, expV(load8(sc + t) - max));
      for (; t < len; t++) sc[t] = expS(sc[t] - max);
      double total = 0;
      for (t = 0; t < len; t++) total += sc[t];
      const float inv = static_cast<float>(1 / total);
      axpyRows(sc, inv, Vv, len, dh, att + i * dq + hh * dh);
    }
  }
}

// The MLP on normed rows h [m, D] into y [m, D] (the model's formulas, in float32).
inline __attribute__((always_inline)) void mlp(Model& md, const LayerW& lw, const float* h, long m, float* y) {
  const long f = lw.up.n;
  float* up = md.up.data();
  linear(lw.up, h, m, up);
  if (lw.hasGate) {
    float* g = md.g.data();
    linear(lw.gate, h, m, g);
    long i = 0;
    for (; i + 8 <= m * f; i += 8) {
      const v8 gv = load8(g + i);
      store8(up + i, (gv / (1.0f + expV(-gv))) * load8(up + i));
    }
    for (; i < m * f; i++) up[i] = (g[i] / (1.0f + expS(-g[i]))) * up[i];
  } else {
    long i = 0;
    for (; i + 8 <= m * f; i += 8) store8(up + i, geluV(load8(up + i)));
    for (; i < m * f; i++) up[i] = geluS(up[i]);
  }
  linear(lw.down, up, m, y);
}

inline __attribute__((always_inline)) void step(Model& md, const int32_t* tokens, std::vector<Row>& rows, const int32_t* want, long nWant, float* out) {
  const long m = static_cast<long>(rows.size()), d = md.D;
  long ffn = 0;
  for (auto& lw : md.layers) ffn = std::max(ffn, lw.up.n);
  auto grow = [](std::vector<float>& v, long n) {
    if (static_cast<long>(v.size()) < n) v.resize(n);
  };
  grow(md.x, m * d);
  grow(md.h, m * d);
  grow(md.qkv, m * (md.H + 2 * md.Hkv) * md.dh);
  grow(md.att, m * md.H * md.dh);
  grow(md.y, m * d);
  grow(md.up, m * ffn);
  grow(md.g, m * ffn);
  grow(md.hx, std::max<long>(1, nWant) * d);
  float* x = md.x.data();
  for (long i = 0; i < m; i++) {
    const float* te = md.tok.data() + static_cast<long>(tokens[i]) * d;
    if (md.pos.empty()) {
      std::memcpy(x + i * d, te, d * sizeof(float));
    } else {
      const float* pe = md.pos.data() + rows[i].pos * d;
      for (long j = 0; j < d; j++) x[i * d + j] = te[j] + pe[j];
    }
  }
  for (long l = 0; l < md.L; l++) {
    const LayerW& lw = md.layers[l];
    norm(md, lw.attnNorm, x, m, md.h.data());
    linear(lw.qkv, md.h.data(), m, md.qkv.data());
    attend(md, l, rows, md.qkv.data(), md.att.data());
    linear(lw.out, md.att.data(), m, md.y.data());
    for (long i = 0; i < m * d; i++) x[i] += md.y[i];
    norm(md, lw.mlpNorm, x, m, md.h.data());
    mlp(md, lw, md.h.data(), m, md.y.data());
    for (long i = 0; i < m * d; i++) x[i] += md.y[i];
  }
  if (nWant == 0) return;
  for (long k = 0; k < nWant; k++) std::memcpy(md.hx.data() + k * d, x + static_cast<long>(want[k]) * d, d * sizeof(float));
  norm(md, md.finalNorm, md.hx.data(), nWant, md.h.data());
  linear(md.head, md.h.data(), nWant, out);
}

// The step compiled twice: for AVX2 and for the baseline ISA (the same arithmetic, the same bits).
__attribute__((target("avx2"))) void stepAvx2(Model& md, const int32_t* tokens, std::vector<Row>& rows, const int32_t* want, long nWant, float* out) { step(md, tokens, rows, want, nWant, out); }
void stepBase(Model& md, const int32_t* tokens, std::vector<Row>& rows, const int32_t* want, long nWant, float* out) { step(md, tokens, rows, want, nWant, out); }

// decodeCreate(spec) → an opaque model (its weights copied).
Napi::Value Create(const Napi::CallbackInfo& info) {
  auto env = info.Env();
  if (!info[0].IsObject()) fail(env, "decodeCreate: expected a model spec object");
  auto o = info[0].As<Napi::Object>();
  auto md = std::make_unique<Model>();
  md->L = intOf(env, o, "nLayers");
  md->D = intOf(env, o, "dModel");
  md->H = intOf(env, o, "nHeads");
  md->V = intOf(env, o, "vocabSize");
  md->seqLen = intOf(env, o, "seqLen");
  const long ffn = intOf(env, o, "ffn");
  // nKvHeads and headDim are optional (default: nHeads and dModel / nHeads, the multi-head shape).
  md->Hkv = o.Has("nKvHeads") && !o.Get("nKvHeads").IsUndefined() ? intOf(env, o, "nKvHeads") : md->H;
  md->dh = o.Has("headDim") && !o.Get("headDim").IsUndefined() ? intOf(env, o, "headDim") : (md->H > 0 ? md->D / md->H : 0);
  if (md->L < 1 || md->D < 1 || md->H < 1 || md->Hkv < 1 || md->H % md->Hkv != 0 || md->dh < 1 || md->V < 1 || md->seqLen < 1 || ffn < 1) fail(env, "decodeCreate: bad dimensions");
  if (!o.Has("headDim") && md->D % md->H != 0) fail(env, "decodeCreate: dModel is not a multiple of nHeads (give headDim)");
  md->rms = o.Get("rms").ToBoolean();
  md->swiglu = o.Get("swiglu").ToBoolean();
  md->eps = o.Get("eps").As<Napi::Number>().DoubleValue();
  const long d = md->D;
  md->tok = floats(env, o.Get("tok"), md->V * d, "tok");
  md->pos = optFloats(env, o, "pos", md->seqLen * d, "spec");
  md->cos = optFloats(env, o, "cos", md->seqLen * (md->dh / 2), "spec");
  md->sin = optFloats(env, o, "sin", md->seqLen * (md->dh / 2), "spec");
  if (md->cos.empty() != md->sin.empty()) fail(env, "decodeCreate: give both cos and sin, or neither");
  if (!o.Get("layers").IsArray()) fail(env, "layers: expected an array");
  auto layers = o.Get("layers").As<Napi::Array>();
  if (static_cast<long>(layers.Length()) != md->L) fail(env, "layers: expected nLayers entries");
  for (long l = 0; l < md->L; l++) {
    auto lo = layers.Get(static_cast<uint32_t>(l)).As<Napi::Object>();
    const std::string p = "layers[" + std::to_string(l) + "]";
    LayerW lw;
    lw.attnNorm = normOf(env, lo.Get("attnNorm"), d, p + ".attnNorm");
    lw.qkv = linOf(env, lo.Get("qkv"), d, (md->H + 2 * md->Hkv) * md->dh, p + ".qkv");
    lw.out = linOf(env, lo.Get("out"), md->H * md->dh, d, p + ".out");
    lw.mlpNorm = normOf(env, lo.Get("mlpNorm"), d, p + ".mlpNorm");
    lw.hasGate = md->swiglu;
    if (md->swiglu) lw.gate = linOf(env, lo.Get("gate"), d, ffn, p + ".gate");
    lw.up = linOf(env, lo.Get("up"), d, ffn, p + ".up");
    lw.down = linOf(env, lo.Get("down"), ffn, d, p + ".down");
    md->layers.push_back(std::move(lw));
  }
  md->finalNorm = normOf(env, o.Get("finalNorm"), d, "finalNorm");
  md->head = linOf(env, o.Get("head"), d, md->V, "head");
  // The handle owns the weights until decodeFree (BatchDecoder.dispose) or, failing that, until
  // the garbage collector finalizes it.
  return Napi::External<Handle>::New(env, new Handle{std::move(md)}, [](Napi::Env, Handle* h) { delete h; });
}

Model& modelOf(Napi::Env env, const Napi::Value& v, const char* what) {
  if (!v.IsExternal()) fail(env, std::string(what) + ": expected a model from decodeCreate");
  Handle* h = v.As<Napi::External<Handle>>().Data();
  if (!h->model) throw Napi::Error::New(env, std::string("levanter native decode: ") + what + " on a model that was freed (the decoder was disposed)");
  return *h->model;
}

// decodeFree(model): frees the weights now (idempotent); later steps on it throw.
Napi::Value Free(const Napi::CallbackInfo& info) {
  auto env = info.Env();
  if (!info[0].IsExternal()) fail(env, "decodeFree: expected a model from decodeCreate");
  info[0].As<Napi::External<Handle>>().Data()->model.reset();
  return env.Undefined();
}

template <typename A>
A typed(Napi::Env env, const Napi::Value& v, napi_typedarray_type t, const char* name) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != t) fail(env, std::string("decodeStep: ") + name + " has the wrong array type");
  return v.As<A>();
}

// decodeStep(model, tokens: Int32Array, positions: Int32Array, kvs: Float32Array[], want: Int32Array, out: Float32Array)
Napi::Value Step(const Napi::CallbackInfo& info) {
  auto env = info.Env();
  Model& md = modelOf(env, info[0], "decodeStep");
  auto tokens = typed<Napi::Int32Array>(env, info[1], napi_int32_array, "tokens");
  auto positions = typed<Napi::Int32Array>(env, info[2], napi_int32_array, "positions");
  if (!info[3].IsArray()) fail(env, "decodeStep: kvs: expected an array");
  auto kvs = info[3].As<Napi::Array>();
  auto want = typed<Napi::Int32Array>(env, info[4], napi_int32_array, "want");
  auto out = typed<Napi::Float32Array>(env, info[5], napi_float32_array, "out");
  const long m = static_cast<long>(tokens.ElementLength());
  if (static_cast<long>(positions.ElementLength()) != m || static_cast<long>(kvs.Length()) != m) fail(env, "decodeStep: tokens, positions and kvs differ in length");
  const long nWant = static_cast<long>(want.ElementLength());
  const int32_t* tok = tokens.Data();
  const int32_t* posv = positions.Data();
  const int32_t* wantv = want.Data();
  if (static_cast<long>(out.ElementLength()) != nWant * md.V) fail(env, "decodeStep: out must hold want.length × vocabSize values");
  const long perPos = 2 * md.L * md.Hkv * md.dh;
  std::vector<Row> rows(m);
  for (long i = 0; i < m; i++) {
    auto kv = typed<Napi::Float32Array>(env, kvs.Get(static_cast<uint32_t>(i)), napi_float32_array, "kvs[i]");
    const long n = static_cast<long>(kv.ElementLength());
    if (n % perPos != 0) fail(env, "decodeStep: a KV buffer's length is not a whole number of positions");
    rows[i] = {kv.Data(), n / perPos, posv[i]};
    if (rows[i].pos < 0 || rows[i].pos >= rows[i].cap || rows[i].pos >= md.seqLen) throw Napi::RangeError::New(env, "levanter native decode: position " + std::to_string(rows[i].pos) + " outside a KV buffer of " + std::to_string(rows[i].cap));
    if (tok[i] < 0 || tok[i] >= md.V) throw Napi::RangeError::New(env, "levanter native decode: token " + std::to_string(tok[i]) + " outside the vocabulary");
  }
  for (long k = 0; k < nWant; k++)
    if (wantv[k] < 0 || wantv[k] >= m) throw Napi::RangeError::New(env, "levanter native decode: want names a row that is not in the step");
  if (useAvx2()) stepAvx2(md, tok, rows, wantv, nWant, out.Data());
  else stepBase(md, tok, rows, wantv, nWant, out.Data());
  return env.Undefined();
}

}  // namespace

void registerDecode(Napi::Env env, Napi::Object exports) {
  exports.Set("decodeCreate", Napi::Function::New(env, Create));
  exports.Set("decodeStep", Napi::Function::New(env, Step));
  exports.Set("decodeFree", Napi::Function::New(env, Free));
}
