// Dynamic shapes, as torch.compile(dynamic=True): the sizes of the user inputs become symbols
// (s0, s1, ...; equal sizes share one, as Dynamo's duck sizing does), and the generated kernels
// take them as arguments (ks0, ks1, ...) instead of having them written in.
//
// How: the front half of a compile (graph stages, loop IR, scheduling, code generation) costs
// milliseconds, compiling the code hundreds. So the front half runs again at sample sizes around
// the traced ones, and the kernels' sources are anti-unified: they must agree token for token
// except for numbers, and each number that moves with the sizes is fitted exactly as a polynomial
// of degree <= 2 in each symbol (a finite-difference design: the grid of 0, 1 and 2 steps of every
// symbol, so batch * height^2 fits) and checked at one more sample (3 steps of all). A symbol that a shape rule ties to a constant
// (a layer norm over the last dimension ties it to the weight's size), or whose change alters the
// code's structure, is specialized to its traced size, with the reason, as Dynamo specializes.
// The template is compiled once. A call at new sizes checks the guards, runs the front half at
// those sizes and checks that its code is the template's at those values (else the guard fails
// and the caller recompiles), then runs the compiled template.
// Tests: tests/core/test_core.cpp (testSizeGenericFit), tests/cpu/test_cpu.cpp (testDynamicBatch).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpp_codegen.h"
#include "tensor/tensor.h"

namespace ls {

struct SizeSymbol {
  std::string name;                       // "s0"
  int64_t hint = 0;                       // its size in the traced inputs
  std::vector<std::pair<int, int>> dims;  // (user input, dimension) that have it
  bool dynamic = true;
  int64_t step = 1;        // sampled at hint + k*step; a step above 1 is guarded (s % step == 0)
  std::string why_static;  // a specialized symbol: the reason
};

// A number in the generated source that follows the sizes.
struct SizeHole {
  int line = 0;        // 1-based, in the source
  std::string traced;  // as the traced code has it: "2048", "256.0f"
  std::string expr;    // "1024*ks0"
  std::vector<std::pair<int64_t, std::vector<int>>> terms;  // coefficient, symbols multiplied (empty: constant)
  int64_t at(const std::vector<int64_t>& values) const;
};

struct SizeGeneric {
  std::vector<std::string> inputs;  // user input names, for the guards' text
  std::vector<Shape> traced;        // the traced shapes of the user inputs
  std::vector<SizeSymbol> symbols;
  std::vector<SizeHole> holes;
  std::vector<std::vector<int64_t>> samples;  // the symbols' values at each front-half run
  double sample_ms = 0;                       // time spent in those runs
  std::string code;                           // the template: what is compiled

  bool any_dynamic() const;
  // The symbols' values (all of them, in order: ks[i] is s<i>) for inputs of these shapes; empty,
  // with the failed guard in *why, where the compiled code does not cover them.
  std::vector<int64_t> values_of(const std::vector<Shape>& shapes, std::string* why) const;
  // The user inputs' shapes at these values of the symbols.
  std::vector<Shape> shapes_at(const std::vector<int64_t>& values) const;
  // Whether `source` (the front half's code at `values`) is the template at those values; else
  // *why names the first line that differs.
  bool matches(const std::string& source, const std::vector<int64_t>& values, std::string* why) const;
  std::vector<std::string> guards() const;  // as Dynamo prints them: "2 <= L['x'].size()[0]"
  std::string report() const;               // the "dynamic" stage's text
  std::vector<std::string> base_tokens;     // the traced code's tokens (holes included)
  std::vector<int> hole_at;                 // per token: index into holes, -1 for none
};

// The front half's code at other sizes of the user inputs; throws where they do not compile.
using GenerateAt = std::function<GeneratedSource(const std::vector<Shape>& user_input_shapes)>;

// How the template's kernels take the sizes: C++ kernels an array (`const int64_t* ks`, their
// launcher passing the launch array's last slot), CUDA kernels one `long long` a symbol after
// their buffers (the launch passes every symbol's value, specialized ones included).
enum class SizeArgs { cpu_array, cuda_values };

// Plans the symbols and builds the template. `traced` is the front half's code at the traced
// shapes, generated as size-generic code (CppCodegenOptions::size_generic).
// Inputs marked static (parameters: Dynamo keeps their shapes static) get no symbols.
SizeGeneric make_size_generic(const std::vector<std::string>& input_names, const std::vector<Shape>& traced_shapes,
                              const std::vector<bool>& static_inputs, const GeneratedSource& traced, const GenerateAt& generate,
                              SizeArgs style = SizeArgs::cpu_array);

}  // namespace ls
