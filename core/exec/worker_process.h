// What the kernel workers of both devices share (exec/isolated_run.h says what a worker is): the
// shared file's header, the plan's text encoding (the loop program, the schedule, the kernels,
// the inputs' and outputs' places), starting and watching the worker, and the worker's side of
// faults and errors. Internal to exec/: the CPU's run is exec/isolated_run.cpp, the CUDA one
// exec/cuda_isolated_run.cpp.
#pragma once
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpp_codegen.h"
#include "exec/executor.h"
#include "exec/isolated_run.h"
#include "loop/loop_ir.h"
#include "sched/schedule.h"
#include "tensor/tensor.h"

namespace ls::worker {

// ---- The shared file: this header, the plan, then the data (inputs, outputs, results) ----

constexpr size_t kHeaderBytes = 16384;

enum Phase : int32_t { starting = 0, loaded = 1, ran = 2, done = 3, failed = 4 };
// How the worker's error is thrown again in the parent.
enum ErrorKind : int32_t { runtime = 0, invalid_argument = 1, out_of_range = 2, logic = 3, kernel_fault = 4, memory_refused = 5 };

struct Header {
  uint64_t magic;
  uint64_t plan_len;   // the plan follows the header
  uint64_t data_off;   // inputs, outputs and results: offsets in the plan are from here
  std::atomic<int64_t> progress[2];  // the kernel running now (-1: none yet), kernels started
  std::atomic<int32_t> phase;
  int32_t fault_signal;
  uint64_t fault_addr;
  int32_t error_kind;
  cpu_set_t cpus;      // the cores the worker may use: the parent's at its start
  char kernel[256];    // kernel_fault: the kernel the error names
  char error[8192];
};

size_t align64(size_t n);

// ---- The plan: a flat stream (ints as text, doubles as the ints of their bits, strings and lists
// after their length); the worker is the same binary, so enums travel as their values. Every read
// is checked against the stream's end, counts against the bytes left (a plan cut short or garbled
// is an error, never a read past it) ----

class Writer {
 public:
  void i(int64_t v);
  void f(double v);
  void str(const std::string& v);
  void ints(const std::vector<int64_t>& v);
  void strs(const std::vector<std::string>& v);
  void arg(const Arg& a);
  std::string& text() { return s_; }

 private:
  std::string s_;
};

class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), end_(p + n) {}
  int64_t i();
  double f();
  size_t n();  // a count: each item takes a byte at least, so no more than the bytes left
  std::string str();
  std::vector<int64_t> ints();
  std::vector<std::string> strs();
  Arg arg();

 private:
  const char* p_;
  const char* end_;
};

// The loop program and its schedule as an executor needs them: buffers, every node (so indices
// stay the same) with its library call, the kernels; loop bodies stay behind (the code is compiled).
void write_program(Writer& w, const LoopProgram& p, const Schedule& s);
void read_program(Reader& r, LoopProgram& p, Schedule& s);
void write_kernels(Writer& w, const std::vector<GeneratedKernel>& kernels);
std::vector<GeneratedKernel> read_kernels(Reader& r);
void write_timing(Writer& w, const TimingOptions& t);
TimingOptions read_timing(Reader& r);

// Where the data lives (offsets from Header::data_off): the inputs, then the program's outputs
// (-1: an output that is no tensor), then `results` bytes the worker fills.
struct DataLayout {
  std::vector<std::pair<DType, Shape>> input_metas;
  std::vector<int64_t> inputs, outputs;
  int64_t results = 0, result_bytes = 0;
  size_t bytes = 0;  // in all
};
DataLayout layout_data(const LoopProgram& p, const std::vector<Tensor>& inputs, size_t result_bytes);
void write_layout(Writer& w, const DataLayout& at);
DataLayout read_layout(Reader& r);
std::vector<Tensor> inputs_from(const char* data, const DataLayout& at);
// The run's outputs into the data (each checked to be its buffer's size); and read back.
void put_outputs(char* data, const LoopProgram& p, const DataLayout& at, const std::vector<Tensor>& outs);
std::vector<Tensor> outputs_from(const char* data, const LoopProgram& p, const DataLayout& at);

// ---- The results the worker hands back, in the data's last DataLayout::result_bytes: binary
// (8-byte ints and doubles, strings and lists after their length). The parent reads them with
// every read checked against that room: a garbled or hostile result is an error, not a crash ----

class ResultWriter {
 public:
  ResultWriter(char* at, size_t room) : p_(at), end_(at + room) {}
  void i(int64_t v) { put(&v, 8); }
  void f(double v) { put(&v, 8); }
  void str(const std::string& v);
  void ints(const std::vector<int64_t>& v);
  void doubles(const std::vector<double>& v);
  void strs(const std::vector<std::string>& v);

 private:
  void put(const void* v, size_t n);  // throws std::logic_error where the room is full
  char* p_;
  char* end_;
};

class ResultReader {
 public:
  ResultReader(const char* at, size_t room) : p_(at), end_(at + room) {}
  int64_t i();
  double f();
  std::string str();
  std::vector<int64_t> ints();
  std::vector<double> doubles();
  std::vector<std::string> strs();

 private:
  size_t n(size_t each);              // a count of items of `each` bytes at least, checked against the bytes left
  void get(void* v, size_t n);        // throws std::runtime_error past the room
  const char* p_;
  const char* end_;
};

// ---- The parent's side ----

// How long the worker may stay in one kernel, and before its first one (loading the code, a GPU
// context); whether kernels run asynchronously (CUDA: in the timed runs a fault or a hang is seen
// some launches later, so the kernel named is the last one launched).
struct Watch {
  double time_limit_s = 60;
  double start_limit_s = 60;
  bool async_kernels = false;
};

// The shared file (header, `plan`, then the data), made and mapped, closed when dropped. run()
// starts `runner` with `args` and --shm 3, waits for it, stops it once one kernel has run past
// the limit, and returns once the worker finished its work; otherwise it throws: KernelFault for
// a signal or a time-out (naming `kernels[k]`), the worker's own errors as it threw them.
class SharedRun {
 public:
  SharedRun(const std::string& plan, size_t data_bytes);
  ~SharedRun();
  SharedRun(const SharedRun&) = delete;
  SharedRun& operator=(const SharedRun&) = delete;
  Header& header() { return *h_; }
  char* data() { return base_ + data_off_; }
  // The inputs copied to their places in the data (the layout's offsets).
  void put_inputs(const DataLayout& at, const std::vector<Tensor>& inputs);
  void run(const std::string& runner, const std::vector<std::string>& args, const std::vector<std::string>& kernels, const Watch& w);

 private:
  int fd_ = -1;
  char* base_ = nullptr;
  size_t bytes_ = 0, data_off_ = 0;
  Header* h_ = nullptr;
};

// The worker's path: o.runner, else $LOWERSCOPE_RUNNER, else lowerscope-runner next to this executable.
std::string runner_path(const IsolationOptions& o);

// ---- The worker's side ----

// The shared file named by --shm FD, mapped, the parent's cores taken, fault handlers installed;
// nullptr (after a line on stderr) where there is none.
Header* attach(int argc, char** argv);
inline const char* plan_of(const Header* h) { return reinterpret_cast<const char*>(h) + kHeaderBytes; }
inline char* data_of(Header* h) { return reinterpret_cast<char*>(h) + h->data_off; }
// The data's size: the shared file's, past Header::data_off (attach checked that it fits).
size_t data_bytes_of(const Header* h);
// The layout read from the plan, checked to lie inside the data (`data_bytes`) with `p`'s outputs:
// std::logic_error naming the part that does not.
void check_layout(const DataLayout& at, const LoopProgram& p, size_t data_bytes);
// Runs `work`, then marks the run done; what it throws goes to the header for the parent
// (KernelFault with its kernel, MemoryRefused, the standard exceptions by kind). Then the
// process ends without teardown (an OpenMP team, a JIT, a GPU context go with it).
[[noreturn]] void serve(Header* h, const std::function<void()>& work);

// The workers' bodies (exec/isolated_run.cpp, exec/cuda_isolated_run.cpp).
[[noreturn]] void cpu_worker(Header* h);
[[noreturn]] void cuda_worker(Header* h);

}  // namespace ls::worker
