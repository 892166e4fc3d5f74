// A generated source (a prelude, then its kernels, each after a blank line) cut into several
// units that compile at once: the CPU path's external compiler and the CUDA path's NVRTC.
#pragma once
#include <string>
#include <vector>

namespace ls {

// Up to `parts` units of whole kernels, each the prelude (the lines before the first kernel) and a
// run of kernels of about equal length, with #line directives naming `file`, so that the
// compiler's messages name the lines of the whole source. `starts`: the first line (1-based) of
// each kernel. One unit (the source as it is) without kernel lines, or where a start does not
// follow a blank line (the source is not the one the lines were taken from).
// `each_alone`: where there are no more kernels than parts, every kernel is a unit of its own. On
// the GPU machine's 16 cores this took g++'s compile of the attention block's training step from
// 440-570 to 340-400 ms. The same split slowed NVRTC, whose programs compiled at once slow each
// other: 7 parts took 310-360 ms, 11 parts 450-590 ms.
std::vector<std::string> split_source(const std::string& source, std::vector<int> starts, int parts, const std::string& file,
                                      bool each_alone = false);

// How many units (external compiler processes, NVRTC programs) a compile runs at once:
// $LOWERSCOPE_COMPILE_THREADS where it is a positive number (as Inductor's compile_threads), else
// one a core.
int compile_threads();

// How many NVRTC programs a compile (and max-autotune's round of candidates) runs at once:
// $LOWERSCOPE_COMPILE_THREADS where set, else at most 3. NVRTC's programs compiled at once slow
// each other far more than the cores explain: on the GPU machine's 16 cores MobileNetV3-Small's
// 14 programs took 490-530 ms (2.8-3.2 s summed over threads), 3 programs 250-280 ms (0.2 s
// summed); the transformer block's training step 250-300 ms in 7, 160-200 ms in 3
// (tools/gpu/ab_compile_threads.sh, results-cuda.md).
int nvrtc_programs_at_once();

}  // namespace ls
