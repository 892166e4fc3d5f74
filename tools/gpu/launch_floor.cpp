// The host's cost of the calls a CUDA run is made of, on this GPU: a kernel launch through the
// driver API, cuBLAS products (strided-batched, plain), cuBLASLt products with the bias epilogue
// (plan cached), on the matrix-multiply shapes of the fixtures. Each figure is the median over 50
// rounds of the time to issue 20 calls from an idle GPU (then a wait), per call: the host's own
// time, not the device's. Built against an exported CUDA package's runtime (runtime.h, helpers.ptx):
//   g++ -O2 -std=c++17 -I PKG -I /usr/local/cuda/include tools/gpu/launch_floor.cpp -L /usr/local/cuda/lib64 \
//       -lcuda -lcublas -lcublasLt -o launch_floor && ./launch_floor PKG
#include "runtime.h"

int main(int argc, char** argv) {
  const std::string pkg = argc > 1 ? argv[1] : ".";
  lsrt::Gpu gpu;
  gpu.load_helpers(pkg);
  const CUdeviceptr y = gpu.alloc(16 << 20), b = gpu.alloc(16 << 20), a = gpu.alloc(16 << 20), w = gpu.alloc(16 << 20);
  cublasHandle_t h = nullptr;
  lsrt::blas_check(cublasCreate(&h), "cublasCreate");
  auto per_call_us = [&](const std::string& what, auto&& call) {
    for (int i = 0; i < 20; ++i) call();
    gpu.sync(what);
    std::vector<double> rounds;
    for (int r = 0; r < 50; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 20; ++i) call();
      rounds.push_back(lsrt::ms_since(t0) * 1000.0 / 20);
      gpu.sync(what);
    }
    std::sort(rounds.begin(), rounds.end());
    std::printf("%-60s %7.2f us a call\n", what.c_str(), rounds[rounds.size() / 2]);
  };
  long long M = 8, N = 120, rs = 0;
  int pr = 0, pc = 1;
  CUfunction f = gpu.helper("ls_broadcast_bias");
  CUdeviceptr yy = y, bb = b;
  void* params[] = {&yy, &bb, &M, &N, &pr, &pc, &rs};
  per_call_us("cuLaunchKernel (ls_broadcast_bias, 7 arguments)", [&] { gpu.launch(f, 4, 256, params, "bias"); });
  struct Shape {
    long long M, N, K;
  };
  for (const Shape s : {Shape{8, 120, 400}, Shape{64, 256, 784}, Shape{64, 10, 256}, Shape{256, 384, 128}}) {
    const std::string dims = std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K) + " (B transposed)";
    per_call_us("cublasSgemmStridedBatched " + dims, [&] { gpu.sgemm(1, s.M, s.N, s.K, 1.f, a, false, 0, w, true, 0, 0.f, y, 0); });
    const float one = 1.f, zero = 0.f;
    per_call_us("cublasSgemm " + dims, [&] {
      cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(s.N), static_cast<int>(s.M), static_cast<int>(s.K), &one,
                  reinterpret_cast<const float*>(w), static_cast<int>(s.K), reinterpret_cast<const float*>(a), static_cast<int>(s.K),
                  &zero, reinterpret_cast<float*>(y), static_cast<int>(s.N));
    });
    per_call_us("cublasLtMatmul + bias epilogue " + dims, [&] { gpu.gemm_bias(s.M, s.N, s.K, 1.f, a, false, w, true, b, y); });
  }
  cublasDestroy(h);
  return 0;
}
