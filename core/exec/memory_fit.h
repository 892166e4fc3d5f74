// A model whose buffers do not fit is refused before the run allocates any of them, with both
// numbers, rather than killed by the OS (or failing in cuMemAlloc half way). What a run needs:
// every buffer the memory plan materialises but the inputs the model already holds (the
// executors allocate each once for the whole run), and the copies the run makes; what is free:
// MemAvailable of /proc/meminfo for the host, cuMemGetInfo's free memory for a GPU.
// Test-only: LOWERSCOPE_MEMORY_AVAILABLE=BYTES stands for the free memory of either.
// Tests: tests/cpu/test_isolation.cpp (testTooLargeModelIsRefused), tests/gui/test_gui.cpp
// (testTooLargeModelLeavesWindowUsable).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "loop/loop_ir.h"
#include "sched/schedule.h"

namespace ls {

struct MemoryNeed {
  int64_t buffers = 0;    // every materialised buffer but the inputs (the model holds those already)
  int64_t inputs = 0, outputs = 0;
  int64_t plan_peak = 0;  // the memory plan's peak (Schedule::memory.peak_bytes)
  int64_t extra = 0;      // copies the run makes (a GPU's inputs; the kernel worker's shared memory)
  std::string extra_what; // "the inputs on the GPU"
  int64_t total() const;  // buffers + extra, saturating
};
MemoryNeed memory_need(const LoopProgram& p, const Schedule& s);

// The host's free memory in bytes (MemAvailable), or LOWERSCOPE_MEMORY_AVAILABLE's; -1 if unknown.
int64_t host_memory_available();
// LOWERSCOPE_MEMORY_AVAILABLE's bytes, or -1 where it is not set.
int64_t memory_available_override();

// "4.0 TiB", "1.5 GiB", "12.0 MiB", "640 bytes".
std::string memory_text(int64_t bytes);

// Thrown where the buffers do not fit.
struct MemoryRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Throws MemoryRefused where need.total() exceeds `available` (unknown, -1: never), e.g.
// "the model needs 34.2 GiB for its buffers (memory plan peak 20.1 GiB), 22.1 GiB available on the
// host (MemAvailable): refused before allocating". `where`: "on the host (MemAvailable)", "on the GPU".
void refuse_if_too_large(const MemoryNeed& need, int64_t available, const std::string& where);

}  // namespace ls
