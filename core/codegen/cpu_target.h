// The CPU that C++ kernels are generated for: the threads they run on and the widest float vector.
// Found on the host once a process. LOWERSCOPE_CPU_TARGET="threads=16,pool=16,vector=16" pins it,
// so that generated sources are the same on every machine (the process replay, tests/replay/).
#pragma once

namespace ls {

struct CpuTarget {
  int threads = 1;        // OpenMP threads a kernel runs on (OMP_NUM_THREADS, else the cores)
  int pool_threads = 1;   // the library calls' thread pool (the cores)
  int vector_floats = 4;  // floats in the widest vector: 16 with AVX-512, 8 with AVX2, else 4
};

const CpuTarget& cpu_target();

}  // namespace ls
