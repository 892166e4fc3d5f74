// The FFT library calls (_fft_r2c, _fft_c2r, _fft_c2c) on the GPU as steps: cuFFT transforms
// of at most 3 dimensions over contiguous batches of signals (cuda/cufft.h), and the helper
// kernels of exec/fft_cuda_kernels.h around them: gathers (a permuted or strided operand made
// contiguous with the transformed dimensions last, c2r's input padded or cut to n/2 + 1, a real
// input made complex for a two-sided r2c) and the normalization's scaling. The same steps as
// ATen's CUDA FFTs (aten/src/ATen/native/cuda/SpectralOps.cpp): c2c over up to 3 dimensions at
// a time; r2c one-sided over the last dimension and up to two others, then c2c over the rest
// (two-sided: a c2c of the input made complex); c2r: its input copied (cuFFT's C2R overwrites
// it), an inverse c2c over all but the last dimension, then a 1-D C2R of lines whose imaginary
// parts at 0 and n/2 are zeroed (not read by the definition); the normalization over
// the signal's full size (1/sqrt(n) or 1/n) scaled on the device. The steps are data, so a test
// runs them without a GPU (tests/cuda/test_cuda.cpp) against a direct DFT.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda/cufft.h"
#include "loop/loop_ir.h"
#include "tensor/dtype.h"

namespace ls {

// Where a step reads and writes: the call's input (slot 0), its output (slot 1), or scratch
// buffers (slot 2 on, FftPlan::scratch_bytes[slot - 2]).
struct FftStep {
  enum class Kind : uint8_t { gather, transform, scale, real_ends };
  Kind kind = Kind::gather;
  int src = 0, dst = 1;
  // gather: dst, contiguous of `shape`, element i = src's element at offset + sum i_d * strides[d]
  // where every i_d < limits[d], else zero; elements of `bytes` (4, 8, 16); widen: src real
  // (bytes / 2 a value), dst complex with imaginary parts 0.
  Shape shape;
  std::vector<int64_t> strides, limits;
  int64_t offset = 0;
  int bytes = 8;
  bool widen = false;
  // transform: cuFFT on contiguous src into dst (in place where src == dst, c2c only).
  FftTransform transform;
  bool forward = true;
  // scale: the first `count` values (float, or double where f64) of dst times `factor`.
  // real_ends: before a C2R, the imaginary parts of elements 0 and (n even) n/2 of each of dst's
  // `count` lines of n/2 + 1 (n: transform.n's last) set to 0: what the op's definition does not
  // read (ATen's CPU kernel and the reference), whatever cuFFT would make of them.
  int64_t count = 0;
  double factor = 1;
  bool f64 = false;
  std::string text() const;  // "gather 4x9x16 (complex64, permuted)", "cuFFT C2C 16, batch 36", "scale by 1/16"
};

struct FftPlan {
  std::vector<FftStep> steps;
  std::vector<int64_t> scratch_bytes;
  std::string text() const;  // the steps, one a line
};

// An FFT call's steps from its operand (shape `in`, element strides and offset into its buffer;
// empty strides: contiguous) to its output (contiguous, shape `out`). op: the call's op (one of
// the three), dims: the transformed dims (negative ones counted from the end), normalization 0
// (none), 1 (1/sqrt(n)), 2 (1/n); flag: r2c's onesided, c2c's forward (c2r: unused). real: the
// real type, f32 or f64. nullopt for what it does not take (another op or type, an empty tensor,
// more than 8 dimensions, another normalization).
std::optional<FftPlan> plan_fft(const OpDef* op, const Shape& in, const std::vector<int64_t>& strides, int64_t offset, const Shape& out,
                                std::vector<int64_t> dims, int64_t normalization, bool flag, DType real);
// The same for a library call of a program (nullopt also for a transposed operand).
std::optional<FftPlan> cuda_fft_plan(const LoopProgram& p, const ExternCall& c);

// The helper kernels' source (exec/fft_cuda_kernels.h, embedded at build time): ls_fft_gather,
// ls_fft_widen, ls_fft_scale, ls_fft_real_ends; compiled by NVRTC on first use (the disk cache keeps the cubin).
const char* fft_kernels_source();
constexpr int kFftMaxRank = 8;  // the gathers' geometry (FftGeometry in the kernels' source)

}  // namespace ls
