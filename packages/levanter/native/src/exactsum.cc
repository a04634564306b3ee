// The exact fixed-point sum of data parallelism in C++ (and the shared memory that ranks on one
// host exchange it through): the same float64 operations, in the same
// order per element, as parallel/exactSum.ts's JS loops, so both give the same bits. These work on
// JS typed arrays (gradients copied out of the tfjs heap, partial sums, wire payloads), not on
// the wasm heap: an argument is (array, element offset), checked against the array's length.
//
// Rounding is JS's Math.round (ties toward +∞): r = floor(x); r += (x − r ≥ 0.5). x − floor(x) is
// exact for every double, so this is Math.round bit for bit. Built without FMA contraction
// (-ffp-contract=off), and each element's result depends on that element alone, so vector and
// scalar forms agree.
#include "exactsum.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define LEV_SHM 1
#endif

namespace {

template <typename T>
T* elems(const Napi::CallbackInfo& info, size_t arg, size_t offArg, long n, const char* what) {
  auto env = info.Env();
  if (!info[arg].IsTypedArray()) throw Napi::TypeError::New(env, std::string("levanter native: ") + what + " must be a typed array");
  auto ta = info[arg].As<Napi::TypedArray>();
  const napi_typedarray_type want = sizeof(T) == 8 ? napi_float64_array : napi_float32_array;
  if (ta.TypedArrayType() != want) throw Napi::TypeError::New(env, std::string("levanter native: ") + what + (sizeof(T) == 8 ? " must be a Float64Array" : " must be a Float32Array"));
  const int64_t off = info[offArg].As<Napi::Number>().Int64Value();
  if (off < 0 || n < 0 || static_cast<uint64_t>(off) + static_cast<uint64_t>(n) > ta.ElementLength())
    throw Napi::RangeError::New(env, std::string("levanter native: ") + what + " range outside the array");
  auto* base = static_cast<uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
  return reinterpret_cast<T*>(base) + off;
}

long count(const Napi::CallbackInfo& info, size_t i) { return static_cast<long>(info[i].As<Napi::Number>().Int64Value()); }

// Scalar forms: the reference, the tails of the vector loops, and the loops on CPUs without AVX2.
void maxAbsScalar(const float* x, long n, float* outMax, bool* outBad) {
  float m = 0.f;
  uint32_t bad = 0;
  for (long i = 0; i < n; i++) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    const float a = std::fabs(x[i]);
    m = a > m ? a : m;
  }
  *outMax = m;
  *outBad = bad != 0;
}

void quantizeAddScalar(double* acc, const float* x, long n, double a, double b) {
  for (long i = 0; i < n; i++) {
    const double v = static_cast<double>(x[i]) * a * b;
    double r = std::floor(v);
    if (v - r >= 0.5) r += 1.0;
    acc[i] += r;
  }
}

void addScalar(double* dst, const double* src, long n) {
  for (long i = 0; i < n; i++) dst[i] += src[i];
}

void finishScalar(const double* acc, float* out, long n, double a, double b, double c) {
  for (long i = 0; i < n; i++) out[i] = static_cast<float>((acc[i] * a * b) / c);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
// AVX2 forms: element by element the same IEEE operations (multiplies, floor, compare, adds,
// divide, one rounding to float32), so the same bits as the scalar forms.
bool haveAvx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

__attribute__((target("avx2"))) void maxAbsAvx2(const float* x, long n, float* outMax, bool* outBad) {
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i expMask = _mm256_set1_epi32(0x7f800000);
  __m256 m = _mm256_setzero_ps();
  __m256i bad = _mm256_setzero_si256();
  long i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i e = _mm256_and_si256(_mm256_castps_si256(v), expMask);
    bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(e, expMask));
    m = _mm256_max_ps(m, _mm256_and_ps(v, absMask));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float tailMax;
  bool tailBad;
  maxAbsScalar(x + i, n - i, &tailMax, &tailBad);
  float best = tailMax;
  for (float l : lanes) best = l > best ? l : best;
  *outMax = best;
  *outBad = tailBad || !_mm256_testz_si256(bad, bad);
}

__attribute__((target("avx2"))) void quantizeAddAvx2(double* acc, const float* x, long n, double a, double b) {
  const __m256d va = _mm256_set1_pd(a), vb = _mm256_set1_pd(b), half = _mm256_set1_pd(0.5), one = _mm256_set1_pd(1.0);
  long i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_mul_pd(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), va), vb);
    __m256d r = _mm256_floor_pd(v);
    const __m256d up = _mm256_cmp_pd(_mm256_sub_pd(v, r), half, _CMP_GE_OQ);
    r = _mm256_add_pd(r, _mm256_and_pd(up, one));
    _mm256_storeu_pd(acc + i, _mm256_add_pd(_mm256_loadu_pd(acc + i), r));
  }
  quantizeAddScalar(acc + i, x + i, n - i, a, b);
}

__attribute__((target("avx2"))) void addAvx2(double* dst, const double* src, long n) {
  long i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(dst + i, _mm256_add_pd(_mm256_loadu_pd(dst + i), _mm256_loadu_pd(src + i)));
  addScalar(dst + i, src + i, n - i);
}

__attribute__((target("avx2"))) void finishAvx2(const double* acc, float* out, long n, double a, double b, double c) {
  const __m256d va = _mm256_set1_pd(a), vb = _mm256_set1_pd(b), vc = _mm256_set1_pd(c);
  long i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_div_pd(_mm256_mul_pd(_mm256_mul_pd(_mm256_loadu_pd(acc + i), va), vb), vc);
    _mm_storeu_ps(out + i, _mm256_cvtpd_ps(v));
  }
  finishScalar(acc + i, out + i, n - i, a, b, c);
}

void maxAbsLoop(const float* x, long n, float* m, bool* bad) { haveAvx2() ? maxAbsAvx2(x, n, m, bad) : maxAbsScalar(x, n, m, bad); }
void quantizeAddLoop(double* acc, const float* x, long n, double a, double b) { haveAvx2() ? quantizeAddAvx2(acc, x, n, a, b) : quantizeAddScalar(acc, x, n, a, b); }
void addLoop(double* dst, const double* src, long n) { haveAvx2() ? addAvx2(dst, src, n) : addScalar(dst, src, n); }
void finishLoop(const double* acc, float* out, long n, double a, double b, double c) { haveAvx2() ? finishAvx2(acc, out, n, a, b, c) : finishScalar(acc, out, n, a, b, c); }
#else
void maxAbsLoop(const float* x, long n, float* m, bool* bad) { maxAbsScalar(x, n, m, bad); }
void quantizeAddLoop(double* acc, const float* x, long n, double a, double b) { quantizeAddScalar(acc, x, n, a, b); }
void addLoop(double* dst, const double* src, long n) { addScalar(dst, src, n); }
void finishLoop(const double* acc, float* out, long n, double a, double b, double c) { finishScalar(acc, out, n, a, b, c); }
#endif

// exactMaxAbs(values: Float32Array, offset, n) → largest |value|, NaN when any is not finite.
Napi::Value MaxAbs(const Napi::CallbackInfo& info) {
  const long n = count(info, 2);
  const float* x = elems<const float>(info, 0, 1, n, "values");
  float m;
  bool bad;
  maxAbsLoop(x, n, &m, &bad);
  return Napi::Number::New(info.Env(), bad ? NAN : static_cast<double>(m));
}

// exactQuantizeAdd(acc: Float64Array, accOffset, values: Float32Array, valuesOffset, n, s):
// acc[i] += Math.round(values[i] · 2^⌊s/2⌋ · 2^(s−⌊s/2⌋)) (trunc toward 0, as JS's Math.trunc).
Napi::Value QuantizeAdd(const Napi::CallbackInfo& info) {
  const long n = count(info, 4);
  double* acc = elems<double>(info, 0, 1, n, "acc");
  const float* x = elems<const float>(info, 2, 3, n, "values");
  const double s = info[5].As<Napi::Number>().DoubleValue();
  const double half = std::trunc(s / 2);
  quantizeAddLoop(acc, x, n, std::pow(2.0, half), std::pow(2.0, s - half));
  return info.Env().Undefined();
}

// exactAdd(dst: Float64Array, dstOffset, src: Float64Array, srcOffset, n): dst[i] += src[i].
Napi::Value Add(const Napi::CallbackInfo& info) {
  const long n = count(info, 4);
  double* dst = elems<double>(info, 0, 1, n, "dst");
  const double* src = elems<const double>(info, 2, 3, n, "src");
  addLoop(dst, src, n);
  return info.Env().Undefined();
}

// exactFinishMean(acc: Float64Array, accOffset, out: Float32Array, outOffset, n, s, count):
// out[i] = float32((acc[i] · 2^−⌊s/2⌋ · 2^−(s−⌊s/2⌋)) / count).
Napi::Value FinishMean(const Napi::CallbackInfo& info) {
  const long n = count(info, 4);
  const double* acc = elems<const double>(info, 0, 1, n, "acc");
  float* out = elems<float>(info, 2, 3, n, "out");
  const double s = info[5].As<Napi::Number>().DoubleValue();
  const double c = info[6].As<Napi::Number>().DoubleValue();
  const double half = std::trunc(s / 2);
  finishLoop(acc, out, n, std::pow(2.0, -half), std::pow(2.0, -(s - half)), c);
  return info.Env().Undefined();
}


// exactRawMean(out: Float32Array, outOffset, copy: Float32Array | null, copyOffset, n, s, count,
// sources: Float32Array[], sourceOffsets: number[]): the mean of raw float32 contributions in one
// pass, out[i] = finish(Σ_r round(sources[r][i] · 2^s)) — the same loops as exactQuantizeAdd into
// a zeroed accumulator and exactFinishMean, run block by block in a cache-resident accumulator
// (the integer sums are exact, so this is their bits). `copy`, when given, gets the same values.
Napi::Value RawMean(const Napi::CallbackInfo& info) {
  auto env = info.Env();
  const long n = count(info, 4);
  float* out = elems<float>(info, 0, 1, n, "out");
  float* copy = info[2].IsNull() || info[2].IsUndefined() ? nullptr : elems<float>(info, 2, 3, n, "copy");
  const double s = info[5].As<Napi::Number>().DoubleValue();
  const double c = info[6].As<Napi::Number>().DoubleValue();
  if (!info[7].IsArray() || !info[8].IsArray()) throw Napi::TypeError::New(env, "levanter native: sources and sourceOffsets must be arrays");
  auto srcs = info[7].As<Napi::Array>();
  auto offs = info[8].As<Napi::Array>();
  if (srcs.Length() != offs.Length()) throw Napi::TypeError::New(env, "levanter native: sources and sourceOffsets differ in length");
  std::vector<const float*> xs;
  for (uint32_t r = 0; r < srcs.Length(); r++) {
    Napi::Value sv = srcs.Get(r);
    if (!sv.IsTypedArray() || sv.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) throw Napi::TypeError::New(env, "levanter native: every source must be a Float32Array");
    auto ta = sv.As<Napi::TypedArray>();
    const int64_t off = offs.Get(r).As<Napi::Number>().Int64Value();
    if (off < 0 || static_cast<uint64_t>(off) + static_cast<uint64_t>(n) > ta.ElementLength()) throw Napi::RangeError::New(env, "levanter native: source range outside the array");
    xs.push_back(reinterpret_cast<const float*>(static_cast<uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset()) + off);
  }
  const double half = std::trunc(s / 2);
  const double qa = std::pow(2.0, half), qb = std::pow(2.0, s - half);
  const double fa = std::pow(2.0, -half), fb = std::pow(2.0, -(s - half));
  constexpr long kBlock = 2048;
  alignas(32) double acc[kBlock];
  for (long i = 0; i < n; i += kBlock) {
    const long m = n - i < kBlock ? n - i : kBlock;
    std::memset(acc, 0, sizeof(double) * static_cast<size_t>(m));
    for (const float* x : xs) quantizeAddLoop(acc, x + i, m, qa, qb);
    finishLoop(acc, out + i, m, fa, fb, c);
    if (copy) std::memcpy(copy + i, out + i, sizeof(float) * static_cast<size_t>(m));
  }
  return env.Undefined();
}

#ifdef LEV_SHM
// Shared memory between the ranks of a gang on one host: a file under /dev/shm mapped MAP_SHARED
// and handed to JS as an external ArrayBuffer (unmapped when the ArrayBuffer is collected).
Napi::Value MapShared(Napi::Env env, int fd, size_t bytes, const std::string& path) {
  void* p = bytes ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : nullptr;
  close(fd);
  if (p == MAP_FAILED) throw Napi::Error::New(env, "levanter native: cannot map " + path + ": " + std::strerror(errno));
  return Napi::ArrayBuffer::New(env, p, bytes, [](Napi::Env, void* data, size_t* len) {
    if (data) munmap(data, *len);
    delete len;
  }, new size_t(bytes));
}

std::string shmPath(const Napi::CallbackInfo& info) {
  const std::string name = info[0].As<Napi::String>();
  // A bare name (no path separators or dots first): the file lives in /dev/shm.
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.') throw Napi::TypeError::New(info.Env(), "levanter native: bad shared-memory name");
  return "/dev/shm/" + name;
}

// shmCreate(name, bytes) → ArrayBuffer: creates /dev/shm/<name> (exclusively, mode 0600) of
// `bytes` and maps it.
Napi::Value ShmCreate(const Napi::CallbackInfo& info) {
  const std::string path = shmPath(info);
  const int64_t bytes = info[1].As<Napi::Number>().Int64Value();
  if (bytes < 0) throw Napi::RangeError::New(info.Env(), "levanter native: negative shared-memory size");
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw Napi::Error::New(info.Env(), "levanter native: cannot create " + path + ": " + std::strerror(errno));
  // Reserve the pages now: on a full tmpfs a write to an unreserved page is a SIGBUS, not an error.
  const int fe = bytes > 0 ? posix_fallocate(fd, 0, bytes) : 0;
  if (fe != 0 || ftruncate(fd, bytes) != 0) {
    const int e = fe != 0 ? fe : errno;
    close(fd);
    unlink(path.c_str());
    throw Napi::Error::New(info.Env(), "levanter native: cannot size " + path + ": " + std::strerror(e));
  }
  return MapShared(info.Env(), fd, static_cast<size_t>(bytes), path);
}

// shmOpen(name) → ArrayBuffer: maps an existing /dev/shm/<name> (whole file).
Napi::Value ShmOpen(const Napi::CallbackInfo& info) {
  const std::string path = shmPath(info);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw Napi::Error::New(info.Env(), "levanter native: cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    throw Napi::Error::New(info.Env(), "levanter native: cannot stat " + path + ": " + std::strerror(e));
  }
  return MapShared(info.Env(), fd, static_cast<size_t>(st.st_size), path);
}

// shmUnlink(name): removes /dev/shm/<name> (mappings stay valid); false when it was not there.
Napi::Value ShmUnlink(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), unlink(shmPath(info).c_str()) == 0);
}
#endif

}  // namespace

void registerExactSum(Napi::Env env, Napi::Object exports) {
  exports.Set("exactMaxAbs", Napi::Function::New(env, MaxAbs));
  exports.Set("exactQuantizeAdd", Napi::Function::New(env, QuantizeAdd));
  exports.Set("exactAdd", Napi::Function::New(env, Add));
  exports.Set("exactFinishMean", Napi::Function::New(env, FinishMean));
  exports.Set("exactRawMean", Napi::Function::New(env, RawMean));
#ifdef LEV_SHM
  exports.Set("shmCreate", Napi::Function::New(env, ShmCreate));
  exports.Set("shmOpen", Napi::Function::New(env, ShmOpen));
  exports.Set("shmUnlink", Napi::Function::New(env, ShmUnlink));
#endif
}
