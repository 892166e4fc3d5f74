// Shapes torch.export records that the op's eager kernel does not give, known and followed. Both
// graph importers (pt2.cpp, fx_text.cpp) check every recorded shape against our shape rule (the
// eager kernel's); where the record is one of these, they keep our node and follow it with a view
// to the recorded shape, so the nodes after it see the shapes they were traced with.
#pragma once
#include <cstddef>

#include "ir/graph.h"
#include "ops/op_table.h"

namespace ls {

// aten.lstm.input's h_n and c_n (outputs 1 and 2): export traces the op through torch._decomp's
// lstm_impl, whose one_layer_lstm returns `hx.squeeze(1)` of a [1, B, H] state (a no-op unless
// B is 1), so the stacked record is [L*D, 1, B, H] where the kernel returns [L*D, B, H]: the same
// elements in the same order (nn.LSTM's h_n of a batch of 2, issue 33's rnn_lstm).
inline bool record_follows_decomposition(const OpDef& op, size_t output, const TensorMeta& ours, const TensorMeta& recorded) {
  if (op.name != "aten.lstm.input" || (output != 1 && output != 2)) return false;
  if (ours.dtype != recorded.dtype || ours.shape.size() != 3) return false;
  return recorded.shape == Shape{ours.shape[0], 1, ours.shape[1], ours.shape[2]};
}

}  // namespace ls
