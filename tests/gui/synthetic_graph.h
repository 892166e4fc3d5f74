// A large synthetic model for the large-graph test and benchmark: `blocks` blocks of `layers`
// layers of `ops` pointwise ops each (sin, mul, add of the block's input, relu, cos), every node
// with its module path "blocks.<b>.layers.<l>" as torch.export records nn_module_stack.
#pragma once
#include <string>

#include "frontend/fx_text.h"
#include "frontend/load_model.h"

inline ls::LoadedModel synthetic_model(int blocks, int layers, int ops, int width = 64) {
  const std::string meta = "\"f32[" + std::to_string(width) + "]\"";
  const char* forms[] = {"torch.ops.aten.sin.default({p})", "torch.ops.aten.mul.Tensor({p}, 0.5)",
                         "torch.ops.aten.add.Tensor({p}, {q})", "torch.ops.aten.relu.default({p})",
                         "torch.ops.aten.cos.default({p})"};
  std::string text = "class Synthetic(torch.nn.Module):\n    def forward(self, x: " + meta + "):\n";
  std::string prev = "x", block_in = "x";
  std::vector<std::string> paths;
  int k = 0;
  for (int b = 0; b < blocks; ++b) {
    for (int l = 0; l < layers; ++l)
      for (int o = 0; o < ops; ++o) {
        std::string e = forms[k % 5];
        e.replace(e.find("{p}"), 3, prev);
        if (e.find("{q}") != std::string::npos) e.replace(e.find("{q}"), 3, block_in);
        const std::string name = "n" + std::to_string(k++);
        text += "        " + name + ": " + meta + " = " + e + "\n";
        paths.push_back("blocks." + std::to_string(b) + ".layers." + std::to_string(l));
        prev = name;
      }
    block_in = prev;
  }
  text += "        return (" + prev + ",)\n";
  ls::LoadedModel m;
  m.path = "synthetic " + std::to_string(k) + "-node model";
  m.format = "fx-text";
  m.graph = ls::import_fx_text(text, "synthetic.txt");
  for (size_t i = 1; i < m.graph.nodes.size(); ++i) m.graph.nodes[i].module_path = paths[i - 1];
  m.inputs = ls::random_inputs(m.graph);
  m.inputs_from = "random normal (seed 0)";
  return m;
}
