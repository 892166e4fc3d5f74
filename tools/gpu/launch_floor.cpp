// The host's cost of the calls a CUDA run is made of, on this GPU: a kernel launch through the
// driver API, a cuBLAS strided-batched product, a cuBLASLt product with its bias epilogue (plan
// cached). Built against an exported CUDA package's runtime (runtime.h, helpers.ptx):
//   g++ -O2 -std=c++17 -I PKG -I /usr/local/cuda/include tools/gpu/launch_floor.cpp -L /usr/local/cuda/lib64 \
//       -lcuda -lcublas -lcublasLt -o launch_floor && ./launch_floor PKG
#include "runtime.h"

int main(int argc, char** argv) {
  const std::string pkg = argc > 1 ? argv[1] : ".";
  lsrt::Gpu gpu;
  gpu.load_helpers(pkg);
  const CUdeviceptr y = gpu.alloc(16 << 20), b = gpu.alloc(16 << 20), a = gpu.alloc(16 << 20), w = gpu.alloc(16 << 20);
  auto per_call_us = [&](const char* what, int n, auto&& call) {
    call();
    gpu.sync(what);
    std::vector<double> runs;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) call();
      runs.push_back(lsrt::ms_since(t0) * 1000.0 / n);
      gpu.sync(what);
    }
    std::sort(runs.begin(), runs.end());
    std::printf("%-52s %7.2f us a call (host, median of 5 x %d)\n", what, runs[2], n);
  };
  long long M = 8, N = 120, rs = 0;
  int pr = 0, pc = 1;
  CUfunction f = gpu.helper("ls_broadcast_bias");
  CUdeviceptr yy = y, bb = b;
  void* params[] = {&yy, &bb, &M, &N, &pr, &pc, &rs};
  per_call_us("cuLaunchKernel (ls_broadcast_bias, 7 arguments)", 2000, [&] { gpu.launch(f, 4, 256, params, "bias"); });
  per_call_us("cublasSgemmStridedBatched 8x120x400", 2000,
              [&] { gpu.sgemm(1, 8, 120, 400, 1.f, a, false, 0, w, true, 0, 0.f, y, 0); });
  per_call_us("cublasLtMatmul 8x120x400 + bias epilogue", 2000, [&] { gpu.gemm_bias(8, 120, 400, 1.f, a, false, w, true, b, y); });
  per_call_us("cublasSgemmStridedBatched 64x1024x576 (conv)", 2000,
              [&] { gpu.sgemm(1, 64, 1024, 576, 1.f, a, false, 0, w, false, 0, 0.f, y, 0); });
  return 0;
}
