// Diffs between two compiles, or two stages of one: graphs with nodes matched by provenance and
// then by structure, fused kernels matched by the user-level nodes they cover, and text by lines.
// The explorer's Diff tab and `lowerscope-cli diff` draw these; tests/core checks them.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ls {

struct Kernel;
struct CompileResult;

enum class Change : uint8_t { same, changed, added, removed };
const char* change_name(Change c);  // "same"

// Node a of the left graph matched to node b of the right one (-1 where one side has none).
struct NodeMatch {
  int a = -1, b = -1;
  Change change = Change::same;
  std::string why;  // what changed: "<left target> -> <right target>", "f32[4, 8] -> f32[8, 8]", "other arguments"
};

struct GraphDiff {
  std::vector<NodeMatch> nodes;  // every right node in its order, then the left nodes removed
  int count(Change c) const;
  std::string summary() const;  // "12 same, 3 changed, 4 added, 2 removed"
};

// Placeholders are matched by name or parameter; op nodes first by provenance (the same
// user-level origins, preferring the same op and inputs that correspond), then by structure (the
// same op reading corresponding inputs), then by name and op. A matched pair is changed when its
// op, its output metadata, its scalar arguments or which inputs it reads differ.
GraphDiff diff_graphs(const Graph& a, const Graph& b);

// Both graphs in one drawing: the right graph's nodes (changed ones orange with what changed,
// added ones green) and the left's removed nodes red and dashed, joined to their matched inputs.
// Node ids are the right graph's names; removed nodes are "removed:<name>".
std::string graph_diff_to_dot(const Graph& a, const Graph& b, const GraphDiff& d);

// Fused kernels matched by the user-level nodes they cover: each right kernel with the left
// kernels that cover any of its nodes. same: one to one with the same coverage; changed: one to
// one with other coverage or body; added/removed: nothing on the other side. Several left kernels
// for one right kernel is a fusion the right side made ("fused"), the reverse a split.
struct KernelMatch {
  std::vector<std::string> a, b;  // kernel names on each side
  Change change = Change::same;
  std::string why;                // "3 kernels fused into 1", "covers 2 more nodes"
};
std::vector<KernelMatch> diff_kernels(const std::vector<Kernel>& a, const std::vector<Kernel>& b);

// Line diff (Myers): each line of both texts once, in order; a is the left line number and b the
// right one, 1-based, 0 where the line is on one side only.
struct LineDiff {
  Change change = Change::same;  // same, removed (left only) or added (right only)
  int a = 0, b = 0;
};
std::vector<LineDiff> diff_lines(const std::string& a, const std::string& b);
std::vector<std::string> text_lines(const std::string& text);  // the lines LineDiff numbers


// A unified text report of a diff between stage `stage_a` of `a` and `stage_b` of `b`: the graph
// diff (or kernel diff for the fused stage) and the changed lines of the stages' text.
std::string diff_report(const CompileResult& a, const std::string& stage_a, const CompileResult& b,
                        const std::string& stage_b);

}  // namespace ls
