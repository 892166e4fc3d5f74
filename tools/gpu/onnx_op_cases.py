"""One-op ONNX models and ONNX Runtime's outputs on them, for tests/onnx/test_onnx_ops.cpp (issue 33, item 3).

Each case is a small model built with onnx.helper (opsets 13 to 21), run by onnxruntime on the
CPU on fixed, seeded inputs. Written per case:
    DIR/<case>.onnx   the model (ONNX-built: an independent check of our importer)
    DIR/<case>.json   {"case": name, "format": 2, "opset": n, "op": "Gather", "rtol": r, "atol": a,
                       "inputs":  [{"name": .., "dtype": "f32", "shape": [..], "data": base64 little-endian}],
                       "outputs": [same, ONNX Runtime's]}
    format 2: a 0-d tensor is written with shape []. Files without "format" wrote it [1] (enc() went
    through np.ascontiguousarray, which returns at least 1-d); tests/onnx/test_onnx_ops.cpp reads
    such a [1] as 0-d where the .onnx declares that graph input or output 0-d.
Runs where onnx and onnxruntime are installed (the GPU machine; nothing needs the GPU):
    python3 tools/gpu/onnx_op_cases.py --out DIR [--only SUBSTRING]
Every case runs in its own try/except: a failure is printed and the others still run.
"""
import argparse
import base64
import json
import os
import sys
import traceback

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DT = {np.float32: ("f32", TensorProto.FLOAT), np.float64: ("f64", TensorProto.DOUBLE),
      np.int64: ("i64", TensorProto.INT64), np.int32: ("i32", TensorProto.INT32),
      np.bool_: ("b8", TensorProto.BOOL), np.uint8: ("u8", TensorProto.UINT8)}
# by the dtype's name: numpy's scalar types differ between builds (longlong is int64 on some)
DT_BY_NAME = {np.dtype(k).name: v for k, v in DT.items()}
F, I, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL

CASES = []


def case(name, op, nodes, inputs, outputs, inits=None, opset=18, rtol=1e-4, atol=1e-5):
    """inputs: [(name, np array)] graph inputs; inits: {name: np array} initializers;
    outputs: [(name, elem type)]; nodes: [NodeProto]."""
    CASES.append(dict(name=name, op=op, nodes=nodes, inputs=inputs, outputs=outputs, inits=inits or {},
                      opset=opset, rtol=rtol, atol=atol))


def N(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


rng = np.random.default_rng(1234)


def r(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def i64(v):
    return np.array(v, dtype=np.int64)


def f32(v):
    return np.array(v, dtype=np.float32)


def unary(name, op, x=None, opset=18, **attrs):
    case(name, op, [N(op, ["x"], ["y"], **attrs)], [("x", r(2, 3, 4) if x is None else x)], [("y", F)], opset=opset)


# ---- indexing and creation --------------------------------------------------------------
case("gather_axis0_const", "Gather", [N("Gather", ["x", "idx"], ["y"], axis=0)], [("x", r(5, 3))], [("y", F)],
     {"idx": i64([[0, -1], [2, 4]])})
case("gather_axis1_input", "Gather", [N("Gather", ["x", "idx"], ["y"], axis=1)],
     [("x", r(2, 5, 3)), ("idx", i64([-1, 0, 3, -5]))], [("y", F)])
case("gather_scalar_last", "Gather", [N("Gather", ["x", "idx"], ["y"], axis=-1)], [("x", r(4, 3))], [("y", F)],
     {"idx": i64(2)})
case("gather_int_data", "Gather", [N("Gather", ["x", "idx"], ["y"], axis=0)],
     [("x", i64([[1, 2], [3, 4], [5, 6]])), ("idx", i64([[2], [-3]]))], [("y", I)])
case("gather_elements", "GatherElements", [N("GatherElements", ["x", "idx"], ["y"], axis=1)],
     [("x", r(3, 4)), ("idx", i64([[0, -1], [3, 2], [-4, 1]]))], [("y", F)])
case("gather_elements_axis0", "GatherElements", [N("GatherElements", ["x", "idx"], ["y"], axis=0)],
     [("x", r(3, 4))], [("y", F)], {"idx": i64([[2, 0, 1, -1], [0, 0, 2, 1]])})
case("gather_nd", "GatherND", [N("GatherND", ["x", "idx"], ["y"])], [("x", r(2, 3, 4))], [("y", F)],
     {"idx": i64([[1, 2], [0, -1]])})
case("gather_nd_full", "GatherND", [N("GatherND", ["x", "idx"], ["y"])],
     [("x", r(2, 3)), ("idx", i64([[[1, 2]], [[0, 0]]]))], [("y", F)])
case("gather_nd_batch", "GatherND", [N("GatherND", ["x", "idx"], ["y"], batch_dims=1)], [("x", r(2, 3, 4))], [("y", F)],
     {"idx": i64([[2], [-1]])})
case("scatter_nd", "ScatterND", [N("ScatterND", ["x", "idx", "u"], ["y"])], [("x", r(4, 3)), ("u", r(2, 3))], [("y", F)],
     {"idx": i64([[1], [3]])})
case("scatter_nd_add", "ScatterND", [N("ScatterND", ["x", "idx", "u"], ["y"], reduction="add")],
     [("x", r(4, 3)), ("u", r(3))], [("y", F)], {"idx": i64([[1, 2], [1, 2], [0, 0]])})
for red in ["none", "add", "mul", "max", "min"]:
    idx = [[1, 0], [2, 3], [0, 3]] if red == "none" else [[1, 1], [2, 3], [0, 0]]
    case("scatter_elements_" + red, "ScatterElements", [N("ScatterElements", ["x", "idx", "u"], ["y"], axis=1, reduction=red)],
         [("x", r(3, 4)), ("u", r(3, 2))], [("y", F)], {"idx": i64(idx)})
case("scatter_elements_neg_axis0", "ScatterElements", [N("ScatterElements", ["x", "idx", "u"], ["y"], axis=0)],
     [("x", r(3, 4)), ("u", r(1, 4))], [("y", F)], {"idx": i64([[-1, 0, 2, -2]])})
case("range_float", "Range", [N("Range", ["s", "l", "d"], ["t"]), N("Add", ["t", "x"], ["y"])], [("x", r(5))], [("y", F)],
     {"s": f32(0.5), "l": f32(3.0), "d": f32(0.5)})
case("range_int_neg", "Range", [N("Range", ["s", "l", "d"], ["t"]), N("Add", ["t", "x"], ["y"])],
     [("x", i64([1, 2, 3, 4]))], [("y", I)], {"s": i64(10), "l": i64(2), "d": i64(-2)})
case("constant_of_shape", "ConstantOfShape",
     [N("ConstantOfShape", ["s"], ["c"], value=helper.make_tensor("v", F, [1], [1.5])), N("Add", ["c", "x"], ["y"])],
     [("x", r(2, 3))], [("y", F)], {"s": i64([2, 3])})
case("constant_of_shape_default", "ConstantOfShape", [N("ConstantOfShape", ["s"], ["c"]), N("Mul", ["c", "x"], ["y"])],
     [("x", r(3, 2))], [("y", F)], {"s": i64([3, 2])})
case("expand", "Expand", [N("Expand", ["x", "s"], ["y"])], [("x", r(3, 1))], [("y", F)], {"s": i64([2, 3, 4])})
case("expand_bidirectional", "Expand", [N("Expand", ["x", "s"], ["y"])], [("x", r(2, 1, 4))], [("y", F)], {"s": i64([3, 1])})
case("where", "Where", [N("Where", ["c", "a", "b"], ["y"])],
     [("c", rng.uniform(size=(2, 3)) > 0.5), ("a", r(2, 3)), ("b", r(3))], [("y", F)])

# ---- comparisons and logic --------------------------------------------------------------
for op in ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]:
    a = np.round(r(2, 3))
    b = np.round(r(3))
    case("cmp_" + op.lower(), op, [N(op, ["a", "b"], ["y"])], [("a", a), ("b", b)], [("y", B)])
case("cmp_equal_int", "Equal", [N("Equal", ["a", "b"], ["y"])], [("a", i64([[1, 2, 3], [3, 2, 1]])), ("b", i64([1, 2, 1]))],
     [("y", B)])
bools = [rng.uniform(size=(2, 3)) > 0.5 for _ in range(2)]
case("not", "Not", [N("Not", ["a"], ["y"])], [("a", bools[0])], [("y", B)])
for op in ["And", "Or", "Xor"]:
    case(op.lower(), op, [N(op, ["a", "b"], ["y"])], [("a", bools[0]), ("b", bools[1])], [("y", B)])
special = f32([[1.0, np.nan, np.inf], [-np.inf, 0.0, -2.0]])
case("isnan", "IsNaN", [N("IsNaN", ["x"], ["y"])], [("x", special)], [("y", B)])
case("isinf", "IsInf", [N("IsInf", ["x"], ["y"])], [("x", special)], [("y", B)])
case("isinf_positive", "IsInf", [N("IsInf", ["x"], ["y"], detect_negative=0)], [("x", special)], [("y", B)])
case("isinf_negative", "IsInf", [N("IsInf", ["x"], ["y"], detect_positive=0)], [("x", special)], [("y", B)])

# ---- normalization ----------------------------------------------------------------------
case("instance_norm", "InstanceNormalization", [N("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-4)],
     [("x", r(2, 3, 4, 5))], [("y", F)], {"s": r(3), "b": r(3)})
case("instance_norm_3d", "InstanceNormalization", [N("InstanceNormalization", ["x", "s", "b"], ["y"])],
     [("x", r(2, 3, 6))], [("y", F)], {"s": r(3), "b": r(3)})
case("group_norm_18", "GroupNormalization", [N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2, epsilon=1e-5)],
     [("x", r(2, 4, 3, 3))], [("y", F)], {"s": r(2), "b": r(2)}, opset=18)
case("group_norm_21", "GroupNormalization", [N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)],
     [("x", r(2, 4, 5))], [("y", F)], {"s": r(4), "b": r(4)}, opset=21)
case("layer_norm", "LayerNormalization", [N("LayerNormalization", ["x", "s", "b"], ["y"])], [("x", r(2, 3, 4))], [("y", F)],
     {"s": r(4), "b": r(4)})
case("layer_norm_axis1", "LayerNormalization", [N("LayerNormalization", ["x", "s"], ["y", "m", "v"], axis=1, epsilon=1e-3)],
     [("x", r(2, 3, 4))], [("y", F), ("m", F), ("v", F)], {"s": r(3, 4)})

# ---- Resize -----------------------------------------------------------------------------
img = r(1, 2, 3, 4)


def resize(name, x, scales=None, sizes=None, opset=18, **attrs):
    inits, ins = {}, ["x", ""]
    if scales is not None:
        inits["sc"] = f32(scales)
        ins.append("sc")
    else:
        ins.append("")
    if sizes is not None:
        inits["sz"] = i64(sizes)
        ins.append("sz")
    while ins and ins[-1] == "":
        ins.pop()
    case("resize_" + name, "Resize", [N("Resize", ins, ["y"], **attrs)], [("x", x)], [("y", F)], inits, opset=opset)


resize("nearest_asym_floor", img, scales=[1, 1, 2, 2], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
resize("nearest_default", img, scales=[1, 1, 2, 3])
resize("nearest_half_pixel_frac", img, scales=[1, 1, 1.5, 0.5], mode="nearest")
resize("nearest_align_ceil", img, sizes=[1, 2, 5, 7], mode="nearest", coordinate_transformation_mode="align_corners",
       nearest_mode="ceil")
resize("nearest_pytorch_half_pixel_round_ceil", img, sizes=[1, 2, 6, 3], mode="nearest",
       coordinate_transformation_mode="pytorch_half_pixel", nearest_mode="round_prefer_ceil")
resize("linear_half_pixel", img, scales=[1, 1, 2, 2], mode="linear")
resize("linear_align_corners", img, sizes=[1, 2, 5, 7], mode="linear", coordinate_transformation_mode="align_corners")
resize("linear_asymmetric_down", img, scales=[1, 1, 0.6, 0.75], mode="linear", coordinate_transformation_mode="asymmetric")
resize("linear_pytorch_half_pixel", img, sizes=[1, 2, 1, 6], mode="linear", coordinate_transformation_mode="pytorch_half_pixel")
resize("linear_3d", r(1, 2, 5), scales=[1, 1, 1.6], mode="linear")
resize("linear_half_pixel_symmetric", img, scales=[1, 1, 1.7, 2.5], mode="linear",
       coordinate_transformation_mode="half_pixel_symmetric", opset=19)
resize("cubic", img, scales=[1, 1, 2, 2], mode="cubic")
resize("cubic_exclude_outside", img, sizes=[1, 2, 5, 3], mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1)
resize("cubic_align_corners", img, sizes=[1, 2, 4, 6], mode="cubic", coordinate_transformation_mode="align_corners")
resize("axes", img, scales=[2, 1.5], mode="linear", axes=[2, 3])
resize("sizes_not_larger", img, sizes=[4, 4], mode="nearest", axes=[2, 3], keep_aspect_ratio_policy="not_larger")

# ---- shape ops --------------------------------------------------------------------------
x34 = r(1, 2, 3, 4)
case("pad_constant", "Pad", [N("Pad", ["x", "p", "v"], ["y"])], [("x", r(2, 3))], [("y", F)],
     {"p": i64([1, 0, 2, 3]), "v": f32(0.5)})
case("pad_constant_negative", "Pad", [N("Pad", ["x", "p"], ["y"])], [("x", r(3, 4))], [("y", F)], {"p": i64([-1, 2, 0, -2])})
case("pad_reflect", "Pad", [N("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", x34)], [("y", F)],
     {"p": i64([0, 0, 1, 2, 0, 0, 2, 1])})
case("pad_edge", "Pad", [N("Pad", ["x", "p"], ["y"], mode="edge")], [("x", r(2, 3, 4))], [("y", F)],
     {"p": i64([1, 0, 3, 0, 2, 1])})
case("pad_wrap", "Pad", [N("Pad", ["x", "p"], ["y"], mode="wrap")], [("x", r(3, 4))], [("y", F)], {"p": i64([1, 2, 2, 1])},
     opset=19)
case("pad_axes", "Pad", [N("Pad", ["x", "p", "", "a"], ["y"], mode="reflect")], [("x", r(2, 3, 4))], [("y", F)],
     {"p": i64([2, 1, 1, 2]), "a": i64([-1, 1])})
case("slice_steps", "Slice", [N("Slice", ["x", "s", "e", "a", "st"], ["y"])], [("x", r(4, 7))], [("y", F)],
     {"s": i64([0, 1]), "e": i64([4, 100]), "a": i64([0, 1]), "st": i64([2, 3])})
case("slice_negative_step", "Slice", [N("Slice", ["x", "s", "e", "a", "st"], ["y"])], [("x", r(4, 7))], [("y", F)],
     {"s": i64([-1, 5]), "e": i64([-9223372036854775808, 0]), "a": i64([0, -1]), "st": i64([-1, -2])})
case("slice_default_axes", "Slice", [N("Slice", ["x", "s", "e"], ["y"])], [("x", r(5, 6))], [("y", F)],
     {"s": i64([1, -4]), "e": i64([-1, 9223372036854775807])})
case("split_sizes", "Split", [N("Split", ["x", "sp"], ["a", "b"], axis=1)], [("x", r(2, 5))], [("a", F), ("b", F)],
     {"sp": i64([2, 3])})
case("split_num_outputs", "Split", [N("Split", ["x"], ["a", "b", "c"], axis=-1, num_outputs=3)], [("x", r(2, 7))],
     [("a", F), ("b", F), ("c", F)])
case("split_equal_13", "Split", [N("Split", ["x"], ["a", "b"])], [("x", r(4, 3))], [("a", F), ("b", F)], opset=13)
case("tile", "Tile", [N("Tile", ["x", "rp"], ["y"])], [("x", r(2, 1, 3))], [("y", F)], {"rp": i64([2, 3, 1])})
case("trilu_upper", "Trilu", [N("Trilu", ["x", "k"], ["y"])], [("x", r(2, 4, 5))], [("y", F)], {"k": i64(1)})
case("trilu_lower", "Trilu", [N("Trilu", ["x", "k"], ["y"], upper=0)], [("x", r(4, 5))], [("y", F)], {"k": i64(-1)})
case("trilu_default", "Trilu", [N("Trilu", ["x"], ["y"])], [("x", r(3, 3))], [("y", F)])
for ex in (0, 1):
    for rv in (0, 1):
        case(f"cumsum_ex{ex}_rev{rv}", "CumSum", [N("CumSum", ["x", "ax"], ["y"], exclusive=ex, reverse=rv)], [("x", r(3, 4))],
             [("y", F)], {"ax": i64(1 if ex == rv else -2)})
case("cumsum_int", "CumSum", [N("CumSum", ["x", "ax"], ["y"])], [("x", i64([[1, 2, 3], [4, 5, 6]]))], [("y", I)], {"ax": i64(0)})
case("topk_largest", "TopK", [N("TopK", ["x", "k"], ["v", "i"], axis=1)], [("x", r(3, 5))], [("v", F), ("i", I)], {"k": i64([2])})
case("topk_smallest", "TopK", [N("TopK", ["x", "k"], ["v", "i"], largest=0)], [("x", r(2, 3, 4))], [("v", F), ("i", I)],
     {"k": i64([3])})
ties = f32([[1, 3, 3, 0], [2, 2, 1, 2], [0, 0, 0, 0]])
case("argmax_keep", "ArgMax", [N("ArgMax", ["x"], ["y"], axis=1)], [("x", r(3, 4, 2))], [("y", I)])
case("argmax_last", "ArgMax", [N("ArgMax", ["x"], ["y"], axis=1, keepdims=0, select_last_index=1)], [("x", ties)], [("y", I)])
case("argmin_first", "ArgMin", [N("ArgMin", ["x"], ["y"], axis=-1, keepdims=0)], [("x", ties)], [("y", I)])
case("argmin_last_axis0", "ArgMin", [N("ArgMin", ["x"], ["y"], axis=0, select_last_index=1)], [("x", ties)], [("y", I)])

# ---- reductions -------------------------------------------------------------------------
for op in ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
           "ReduceSumSquare", "ReduceLogSum"]:
    xx = r(2, 3, 4, lo=0.5, hi=1.5) if op == "ReduceLogSum" else r(2, 3, 4)
    case(op.lower() + "_axes", op, [N(op, ["x", "a"], ["y"])], [("x", xx)], [("y", F)], {"a": i64([0, -1])})
    case(op.lower() + "_all_nokeep", op, [N(op, ["x"], ["y"], keepdims=0)], [("x", xx)], [("y", F)])
case("reducemean_13_attr", "ReduceMean", [N("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)], [("x", r(2, 3, 4))], [("y", F)],
     opset=13)
case("reducemax_13_attr", "ReduceMax", [N("ReduceMax", ["x"], ["y"], axes=[-1, 0])], [("x", r(2, 3, 4))], [("y", F)], opset=13)
case("reducesum_noop", "ReduceSum", [N("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1)], [("x", r(2, 3))], [("y", F)])
case("reducesum_int", "ReduceSum", [N("ReduceSum", ["x", "a"], ["y"], keepdims=0)], [("x", i64([[1, 2, 3], [4, 5, 6]]))],
     [("y", I)], {"a": i64([1])})

# ---- matrix products and convolution ----------------------------------------------------
for nm, sa, sb in [("3d_2d", (2, 3, 4), (4, 5)), ("2d_3d", (3, 4), (2, 4, 5)), ("1d_3d", (4,), (2, 4, 5)),
                   ("broadcast", (2, 1, 3, 4), (3, 4, 2)), ("3d_1d", (2, 3, 4), (4,)), ("1d_1d", (4,), (4,))]:
    case("matmul_" + nm, "MatMul", [N("MatMul", ["a", "b"], ["y"])], [("a", r(*sa)), ("b", r(*sb))], [("y", F)])
case("gemm_trans", "Gemm", [N("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.5, beta=2.0)],
     [("a", r(4, 3))], [("y", F)], {"b": r(5, 4), "c": r(5)})
case("gemm_scalar_c", "Gemm", [N("Gemm", ["a", "b", "c"], ["y"], beta=0.5)], [("a", r(3, 4)), ("b", r(4, 2))], [("y", F)],
     {"c": f32([1.5])})
case("gemm_column_c", "Gemm", [N("Gemm", ["a", "b", "c"], ["y"], transB=1)], [("a", r(3, 4))], [("y", F)],
     {"b": r(2, 4), "c": r(3, 1)})
case("gemm_no_c", "Gemm", [N("Gemm", ["a", "b"], ["y"], alpha=3.0)], [("a", r(3, 4)), ("b", r(4, 2))], [("y", F)])
case("conv_groups_dilation", "Conv",
     [N("Conv", ["x", "w", "b"], ["y"], group=2, dilations=[2, 1], strides=[2, 1], pads=[1, 0, 2, 1])],
     [("x", r(1, 4, 7, 6))], [("y", F)], {"w": r(6, 2, 3, 2), "b": r(6)})
case("conv_same_upper", "Conv", [N("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])], [("x", r(1, 2, 6, 5))],
     [("y", F)], {"w": r(3, 2, 3, 3)})
case("conv_same_lower", "Conv", [N("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER", kernel_shape=[2, 2])],
     [("x", r(1, 2, 5, 5))], [("y", F)], {"w": r(3, 2, 2, 2)})
case("conv_valid", "Conv", [N("Conv", ["x", "w"], ["y"], auto_pad="VALID")], [("x", r(2, 2, 5, 5))], [("y", F)],
     {"w": r(3, 2, 3, 3)})
case("conv_1d", "Conv", [N("Conv", ["x", "w", "b"], ["y"], pads=[1, 2], dilations=[2], strides=[1])], [("x", r(2, 3, 8))],
     [("y", F)], {"w": r(4, 3, 3), "b": r(4)})
case("conv_depthwise", "Conv", [N("Conv", ["x", "w"], ["y"], group=3, pads=[1, 1, 1, 1])], [("x", r(1, 3, 5, 5))], [("y", F)],
     {"w": r(3, 1, 3, 3)})

# ---- elementwise ------------------------------------------------------------------------
unary("erf", "Erf")
unary("softplus", "Softplus", x=r(2, 3, 4, lo=-30, hi=30))
unary("hardsigmoid", "HardSigmoid", alpha=0.3, beta=0.4)
unary("hardsigmoid_default", "HardSigmoid", x=r(2, 3, 4, lo=-5, hi=5))
unary("hardswish", "HardSwish", x=r(2, 3, 4, lo=-5, hi=5))
unary("leakyrelu", "LeakyRelu", alpha=0.1)
unary("elu", "Elu", alpha=0.5)
unary("selu", "Selu")
unary("selu_attrs", "Selu", alpha=2.0, gamma=3.0)
unary("mish", "Mish", x=r(2, 3, 4, lo=-6, hi=6))
unary("sign", "Sign", x=f32([[-2, 0, 3], [0.5, -0.0, -1e-3]]))
unary("floor", "Floor")
unary("ceil", "Ceil")
unary("round", "Round", x=f32([[0.5, 1.5, 2.5, -0.5], [-1.5, 2.4, -2.6, 3.0]]))
case("mod_int", "Mod", [N("Mod", ["a", "b"], ["y"])], [("a", i64([[7, -7, 7, -7], [5, 0, -3, 9]])), ("b", i64([3, 3, -3, -3]))],
     [("y", I)])
case("mod_fmod", "Mod", [N("Mod", ["a", "b"], ["y"], fmod=1)], [("a", r(2, 3, lo=-5, hi=5)), ("b", f32([1.5, -2.0, 0.7]))],
     [("y", F)])
case("max_variadic", "Max", [N("Max", ["a", "b", "c"], ["y"])], [("a", r(2, 3)), ("b", r(3)), ("c", r(2, 1))], [("y", F)])
case("min_variadic", "Min", [N("Min", ["a", "b", "c"], ["y"])], [("a", r(2, 3)), ("b", r(3)), ("c", r(2, 1))], [("y", F)])
case("max_single", "Max", [N("Max", ["a"], ["y"])], [("a", r(2, 3))], [("y", F)])
case("sum_variadic", "Sum", [N("Sum", ["a", "b", "c"], ["y"])], [("a", r(2, 3)), ("b", r(3)), ("c", r(2, 1))], [("y", F)])
case("mean_variadic", "Mean", [N("Mean", ["a", "b", "c"], ["y"])], [("a", r(2, 3)), ("b", r(3)), ("c", r(2, 1))], [("y", F)])
case("cast_float_int", "Cast", [N("Cast", ["x"], ["y"], to=I)], [("x", r(2, 3, lo=-5, hi=5))], [("y", I)])
case("cast_int_float", "Cast", [N("Cast", ["x"], ["y"], to=F)], [("x", i64([[1, -2, 3]]))], [("y", F)])
case("cast_float_bool", "Cast", [N("Cast", ["x"], ["y"], to=B)], [("x", f32([[0, 1.5, -0.0, -2]]))], [("y", B)])
case("cast_bool_float", "Cast", [N("Cast", ["x"], ["y"], to=F)], [("x", bools[0])], [("y", F)])
case("cast_double", "Cast", [N("Cast", ["x"], ["y"], to=TensorProto.DOUBLE)], [("x", r(2, 2))], [("y", TensorProto.DOUBLE)])
case("shape_reshape", "Shape",
     [N("Shape", ["x"], ["s"]), N("Gather", ["s", "zero"], ["d"], axis=0), N("Unsqueeze", ["d", "zero1"], ["d1"]),
      N("Concat", ["d1", "m1"], ["ns"], axis=0), N("Reshape", ["x", "ns"], ["y"])],
     [("x", r(2, 3, 4))], [("y", F)], {"zero": i64(0), "zero1": i64([0]), "m1": i64([-1])})
case("shape_start_end", "Shape",
     [N("Shape", ["x"], ["s"], start=1, end=-1), N("ConstantOfShape", ["s"], ["c"], value=helper.make_tensor("v", F, [1], [2.0])),
      N("Mul", ["c", "z"], ["y"])], [("x", r(2, 3, 4)), ("z", r(3))], [("y", F)], opset=15)
case("size", "Size", [N("Size", ["x"], ["n"]), N("Cast", ["n"], ["nf"], to=F), N("Mul", ["x", "nf"], ["y"])], [("x", r(2, 3))],
     [("y", F)])
case("shape_arith_fold", "Shape",
     [N("Shape", ["x"], ["s"]), N("Slice", ["s", "one", "two"], ["h"]), N("Cast", ["h"], ["hf"], to=F), N("Sqrt", ["hf"], ["sq"]),
      N("Div", ["x", "sq"], ["y"])], [("x", r(2, 4))], [("y", F)], {"one": i64([1]), "two": i64([2])})
case("unsqueeze", "Unsqueeze", [N("Unsqueeze", ["x", "a"], ["y"])], [("x", r(2, 3))], [("y", F)], {"a": i64([-1, 0])})
case("squeeze_axes", "Squeeze", [N("Squeeze", ["x", "a"], ["y"])], [("x", r(2, 1, 3, 1))], [("y", F)], {"a": i64([-1])})
case("squeeze_all", "Squeeze", [N("Squeeze", ["x"], ["y"])], [("x", r(1, 3, 1))], [("y", F)])
case("flatten_axis2", "Flatten", [N("Flatten", ["x"], ["y"], axis=2)], [("x", r(2, 3, 4, 2))], [("y", F)])
case("flatten_axis0", "Flatten", [N("Flatten", ["x"], ["y"], axis=0)], [("x", r(2, 3))], [("y", F)])
case("transpose", "Transpose", [N("Transpose", ["x"], ["y"], perm=[2, 0, 1])], [("x", r(2, 3, 4))], [("y", F)])
case("transpose_default", "Transpose", [N("Transpose", ["x"], ["y"])], [("x", r(2, 3, 4))], [("y", F)])
case("concat", "Concat", [N("Concat", ["a", "b", "c"], ["y"], axis=-1)], [("a", r(2, 1)), ("b", r(2, 3))], [("y", F)],
     {"c": r(2, 2)})
case("identity", "Identity", [N("Identity", ["x"], ["y"])], [("x", r(2, 3))], [("y", F)])
case("dropout", "Dropout", [N("Dropout", ["x", "ratio"], ["y"])], [("x", r(2, 3))], [("y", F)], {"ratio": f32(0.3)})
case("dropout_mask", "Dropout", [N("Dropout", ["x"], ["y", "m"])], [("x", r(2, 3))], [("y", F), ("m", B)])
case("clip", "Clip", [N("Clip", ["x", "lo", "hi"], ["y"])], [("x", r(2, 3, 4))], [("y", F)], {"lo": f32(-0.5), "hi": f32(1.0)})
case("clip_min_only", "Clip", [N("Clip", ["x", "lo"], ["y"])], [("x", r(2, 3))], [("y", F)], {"lo": f32(0.2)})
case("clip_max_input", "Clip", [N("Clip", ["x", "", "hi"], ["y"])], [("x", r(2, 3)), ("hi", f32(0.3))], [("y", F)])
case("clip_int", "Clip", [N("Clip", ["x", "lo", "hi"], ["y"])], [("x", i64([[-5, 0, 5, 9]]))], [("y", I)],
     {"lo": i64(-1), "hi": i64(6)})

# ---- shape computations as exporters write them (folded at import) -----------------------
case("gather_int32_idx", "Gather", [N("Gather", ["x", "idx"], ["y"], axis=0)],
     [("x", r(4, 2)), ("idx", np.array([3, -4, 1], dtype=np.int32))], [("y", F)])
case("range_from_shape", "Range",
     [N("Shape", ["x"], ["s"]), N("Gather", ["s", "one"], ["n"], axis=0), N("Range", ["zero", "n", "step"], ["t"]),
      N("Cast", ["t"], ["tf"], to=F), N("Add", ["x", "tf"], ["y"])],
     [("x", r(2, 5))], [("y", F)], {"one": i64(1), "zero": i64(0), "step": i64(1)})
case("expand_where_fold", "Expand",
     [N("Concat", ["a", "b", "c"], ["s"], axis=0), N("Equal", ["s", "m1"], ["eq"]), N("Where", ["eq", "ones", "s"], ["w"]),
      N("Expand", ["x", "w"], ["y"])],
     [("x", r(3, 1))], [("y", F)],
     {"a": i64([2]), "b": i64([-1]), "c": i64([4]), "m1": i64([-1, -1, -1]), "ones": i64([1, 1, 1])})
case("cast_int32", "Cast", [N("Cast", ["x"], ["y"], to=TensorProto.INT32)], [("x", r(2, 3, lo=-9, hi=9))], [("y", TensorProto.INT32)])
case("resize_linear_upsample_exact", "Resize", [N("Resize", ["x", "", "", "sz"], ["y"], mode="linear")], [("x", r(1, 2, 3, 4))],
     [("y", F)], {"sz": i64([1, 2, 6, 8])})


# ---- Einsum, ConvTranspose, LSTM, GRU, If, Loop ------------------------------------------
for nm, eq, shapes in [("bmm", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("trace", "ii", [(4, 4)]),
                       ("implicit_order", "Ab,bc", [(2, 3), (3, 4)]), ("transpose_implicit", "ba", [(2, 3)]),
                       ("ellipsis_broadcast", "...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
                       ("diagonal_three", "...ii,...ik,i->...k", [(2, 1, 3, 3), (5, 3, 2), (3,)]),
                       ("outer", "i,j->ij", [(3,), (4,)]), ("reduce_all", "ijk->", [(2, 3, 4)])]:
    names = [chr(ord("a") + k) for k in range(len(shapes))]
    case("einsum_" + nm, "Einsum", [N("Einsum", names, ["y"], equation=eq)], [(n_, r(*sh)) for n_, sh in zip(names, shapes)],
         [("y", F)])
case("convT_groups_asym_pads", "ConvTranspose",
     [N("ConvTranspose", ["x", "w", "b"], ["y"], group=2, strides=[2, 1], dilations=[1, 2], pads=[1, 0, 0, 1], output_padding=[1, 0])],
     [("x", r(1, 4, 3, 4))], [("y", F)], {"w": r(4, 3, 3, 2), "b": r(6)})
case("convT_1d_same_upper", "ConvTranspose", [N("ConvTranspose", ["x", "w"], ["y"], strides=[2], auto_pad="SAME_UPPER")],
     [("x", r(2, 3, 5))], [("y", F)], {"w": r(3, 2, 4)})
case("convT_same_lower", "ConvTranspose", [N("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], auto_pad="SAME_LOWER")],
     [("x", r(1, 2, 3, 3))], [("y", F)], {"w": r(2, 2, 2, 3), "b": r(2)})
case("convT_output_shape", "ConvTranspose", [N("ConvTranspose", ["x", "w"], ["y"], strides=[2, 3], output_shape=[6, 8])],
     [("x", r(1, 2, 3, 3))], [("y", F)], {"w": r(2, 1, 3, 3)})
case("convT_valid_3d", "ConvTranspose",
     [N("ConvTranspose", ["x", "w", "b"], ["y"], strides=[1, 2, 1], dilations=[1, 1, 2], auto_pad="VALID")],
     [("x", r(1, 2, 2, 3, 2))], [("y", F)], {"w": r(2, 2, 2, 2, 2), "b": r(2)})
case("convT_depthwise", "ConvTranspose", [N("ConvTranspose", ["x", "w", "b"], ["y"], group=3, pads=[1, 1, 1, 1])],
     [("x", r(1, 3, 4, 4))], [("y", F)], {"w": r(3, 1, 3, 3), "b": r(3)})
T_, B_, I_, H_ = 4, 2, 3, 3
for nm, lstm, direction, layout, bias, init, peep, lbr in [
        ("lstm_forward", 1, "forward", 0, 1, 1, 0, 0), ("lstm_reverse_nobias", 1, "reverse", 0, 0, 0, 0, 0),
        ("lstm_bidirectional_layout1_peepholes", 1, "bidirectional", 1, 1, 1, 1, 0), ("gru_forward", 0, "forward", 0, 1, 1, 0, 0),
        ("gru_reverse_lbr", 0, "reverse", 0, 1, 0, 0, 1), ("gru_bidirectional_layout1_lbr", 0, "bidirectional", 1, 1, 1, 0, 1),
        ("gru_bidirectional_nobias", 0, "bidirectional", 0, 0, 1, 0, 0)]:
    D_, G_ = (2 if direction == "bidirectional" else 1), (4 if lstm else 3)
    ins, inits, feeds = ["X", "W", "R", "B" if bias else "", "", "h0" if init else ""], {"W": r(D_, G_ * H_, I_), "R": r(D_, G_ * H_, H_)}, []
    feeds.append(("X", r(B_, T_, I_) if layout else r(T_, B_, I_)))
    if bias:
        inits["B"] = r(D_, 2 * G_ * H_)
    if init:
        feeds.append(("h0", r(B_, D_, H_) if layout else r(D_, B_, H_)))
    outs = [("Y", F), ("Yh", F)]
    if lstm:
        ins.append("c0" if init else "")
        if init:
            feeds.append(("c0", r(B_, D_, H_) if layout else r(D_, B_, H_)))
        if peep:
            ins.append("P")
            inits["P"] = r(D_, 3 * H_)
        outs.append(("Yc", F))
    while ins[-1] == "":
        ins.pop()
    attrs = dict(direction=direction, hidden_size=H_, layout=layout)
    if lbr:
        attrs["linear_before_reset"] = 1
    case(nm, "LSTM" if lstm else "GRU", [N("LSTM" if lstm else "GRU", ins, [o for o, _ in outs], **attrs)], feeds, outs, inits)
for cond in (True, False):
    then_g = helper.make_graph([N("Add", ["x", "w"], ["t"]), N("Mul", ["t", "x"], ["t2"])], "then", [],
                               [helper.make_tensor_value_info("t2", F, [2, 3])])
    else_g = helper.make_graph([N("Sub", ["x", "w"], ["t"])], "else", [], [helper.make_tensor_value_info("t", F, [2, 3])])
    case("if_" + ("then" if cond else "else"), "If", [N("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
         [("x", r(2, 3))], [("y", F)], {"c": np.array(cond), "w": r(3)})
loop_body = helper.make_graph(
    [N("Identity", ["c_in"], ["c_out"]), N("Cast", ["i"], ["fi"], to=F), N("Mul", ["w", "fi"], ["wi"]), N("Add", ["v_in", "wi"], ["v_out"]),
     N("Mul", ["v_out", "v_out"], ["sq"])], "body",
    [helper.make_tensor_value_info("i", I, []), helper.make_tensor_value_info("c_in", B, []), helper.make_tensor_value_info("v_in", F, [2])],
    [helper.make_tensor_value_info("c_out", B, []), helper.make_tensor_value_info("v_out", F, [2]), helper.make_tensor_value_info("sq", F, [2])])
case("loop_unrolled", "Loop", [N("Loop", ["M", "cond", "x"], ["final", "scan"], body=loop_body)], [("x", r(2))],
     [("final", F), ("scan", F)], {"M": i64(3), "cond": np.array(True), "w": r(2)})
while_body = helper.make_graph(
    [N("Less", ["i", "one"], ["c_out"]), N("Add", ["v_in", "v_in"], ["v_out"])], "body",
    [helper.make_tensor_value_info("i", I, []), helper.make_tensor_value_info("c_in", B, []), helper.make_tensor_value_info("v_in", F, [3])],
    [helper.make_tensor_value_info("c_out", B, []), helper.make_tensor_value_info("v_out", F, [3])])
case("loop_while_folded", "Loop", [N("Loop", ["", "cond", "x"], ["final"], body=while_body)], [("x", r(3))], [("final", F)],
     {"cond": np.array(True), "one": i64(1)})


# ---- pooling: AveragePool, MaxPool, LpPool, Global* (1-D to 3-D, every attribute) -----------
# Own generator, so these inputs do not shift the cases above.
prng = np.random.default_rng(4321)


def pr(*shape):
    return prng.uniform(-2.0, 2.0, size=shape).astype(np.float32)


px1, px2, px3 = pr(2, 2, 9), pr(2, 3, 7, 6), pr(1, 2, 5, 4, 6)


def pool(name, op, x, opset=19, outs=("y",), **attrs):
    case(name, op, [N(op, ["x"], list(outs), **attrs)], [("x", x)], [(o, F if o == "y" else I) for o in outs], opset=opset)


for ap in ("SAME_UPPER", "SAME_LOWER", "VALID"):
    pool(f"avgpool_{ap.lower()}", "AveragePool", px2, kernel_shape=[3, 2], strides=[2, 2], auto_pad=ap)
    pool(f"avgpool_{ap.lower()}_cip1", "AveragePool", px2, kernel_shape=[3, 2], strides=[2, 2], auto_pad=ap, count_include_pad=1)
    pool(f"maxpool_{ap.lower()}", "MaxPool", px2, kernel_shape=[3, 2], strides=[2, 2], auto_pad=ap)
for cip in (0, 1):
    for ceil in (0, 1):
        sfx = f"_cip{cip}_ceil{ceil}"
        pool("avgpool_sym" + sfx, "AveragePool", px2, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=ceil,
             count_include_pad=cip)
        pool("avgpool_asym" + sfx, "AveragePool", px2, kernel_shape=[3, 2], strides=[2, 2], pads=[0, 1, 2, 0], ceil_mode=ceil,
             count_include_pad=cip)
        pool("avgpool_1d" + sfx, "AveragePool", px1, kernel_shape=[4], strides=[3], pads=[1, 2], ceil_mode=ceil, count_include_pad=cip)
        pool("avgpool_3d" + sfx, "AveragePool", px3, kernel_shape=[3, 2, 3], strides=[2, 2, 2], pads=[1, 0, 1, 1, 1, 1], ceil_mode=ceil,
             count_include_pad=cip)
    pool(f"avgpool_dilated_cip{cip}", "AveragePool", px2, kernel_shape=[2, 3], strides=[2, 1], dilations=[2, 2], pads=[1, 1, 0, 2],
         count_include_pad=cip)
    pool(f"avgpool_bigpad_cip{cip}", "AveragePool", px2, kernel_shape=[3, 2], strides=[3, 2], pads=[2, 1, 2, 1], count_include_pad=cip)
pool("avgpool_1d_sym_ceil", "AveragePool", px1, kernel_shape=[3], strides=[2], pads=[1, 1], ceil_mode=1)
pool("avgpool_3d_sym_cip1", "AveragePool", px3, kernel_shape=[3, 2, 3], strides=[2, 1, 2], pads=[1, 1, 1, 1, 1, 1], count_include_pad=1)
pool("avgpool_default_stride_13", "AveragePool", px2, opset=13, kernel_shape=[2, 3])
for ceil in (0, 1):
    pool(f"maxpool_asym_ceil{ceil}", "MaxPool", px2, kernel_shape=[3, 2], strides=[2, 2], pads=[0, 1, 2, 0], ceil_mode=ceil)
    pool(f"maxpool_dilated_ceil{ceil}", "MaxPool", px2, outs=("y", "i"), kernel_shape=[2, 2], strides=[2, 1], dilations=[2, 3],
         pads=[1, 1, 1, 1], ceil_mode=ceil)
    pool(f"maxpool_1d_ceil{ceil}", "MaxPool", px1, outs=("y", "i"), kernel_shape=[3], strides=[2], pads=[1, 1], ceil_mode=ceil)
    pool(f"maxpool_3d_ceil{ceil}", "MaxPool", px3, outs=("y", "i"), kernel_shape=[3, 2, 3], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1],
         ceil_mode=ceil)
pool("maxpool_1d_asym", "MaxPool", px1, kernel_shape=[4], strides=[3], pads=[0, 2])
pool("maxpool_3d_asym", "MaxPool", px3, kernel_shape=[2, 2, 3], strides=[2, 1, 2], pads=[1, 0, 0, 0, 1, 2])
pool("maxpool_indices_2d", "MaxPool", px2, outs=("y", "i"), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
pool("lppool_p2_pads", "LpPool", px2, opset=18, kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1], p=2)
pool("lppool_p1_ceil", "LpPool", px2, opset=18, kernel_shape=[2, 2], strides=[2, 3], ceil_mode=1, p=1)
pool("lppool_p3_dilated_1d", "LpPool", px1, opset=18, kernel_shape=[3], dilations=[2], pads=[1, 1], p=3)
pool("lppool_same_upper_3d", "LpPool", px3, opset=18, kernel_shape=[2, 2, 2], strides=[2, 2, 2], auto_pad="SAME_UPPER")
for op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
    pool(f"{op.lower()}_1d", op, px1, opset=18)
    pool(f"{op.lower()}_3d", op, px3, opset=18)

# ---- inputs known at import through Constant nodes (CumSum's axis, as torch.onnx.export writes it)
case("cumsum_axis_constant_node", "CumSum",
     [N("Constant", [], ["ax"], value=numpy_helper.from_array(i64(1), "ax")), N("CumSum", ["x", "ax"], ["y"])],
     [("x", pr(3, 4))], [("y", F)])
case("cumsum_axis_cast", "CumSum",
     [N("Constant", [], ["af"], value=numpy_helper.from_array(f32([0.0]), "af")), N("Cast", ["af"], ["a64"], to=I),
      N("Squeeze", ["a64"], ["ax"]), N("CumSum", ["x", "ax"], ["y"], reverse=1)],
     [("x", pr(3, 4))], [("y", F)])
case("cumsum_axis_reshape_int32", "CumSum",
     [N("Constant", [], ["a1"], value_ints=[1]), N("Constant", [], ["sh"], value=numpy_helper.from_array(np.zeros(0, np.int64), "sh")),
      N("Reshape", ["a1", "sh"], ["a0"]), N("Cast", ["a0"], ["ax"], to=TensorProto.INT32), N("CumSum", ["x", "ax"], ["y"])],
     [("x", pr(2, 5))], [("y", F)])
# hf_roberta's position ids: the initializer 1 is a tensor operand (ne(ids, 1)) before it is CumSum's axis
case("cumsum_axis_shared_initializer", "CumSum",
     [N("Equal", ["ids", "one"], ["eq"]), N("Not", ["eq"], ["ne"]), N("Cast", ["ne"], ["mask"], to=I), N("CumSum", ["mask", "one"], ["cs"]),
      N("Mul", ["cs", "mask"], ["pos"]), N("Add", ["pos", "one"], ["y"])],
     [("ids", i64([[0, 5, 7, 1, 1], [3, 1, 9, 4, 1]]))], [("y", I)], {"one": i64(1)})


def enc(name, a):
    a = np.asarray(a)  # not np.ascontiguousarray: it makes a 0-d array 1-d; tobytes() writes C order anyway
    dt = DT_BY_NAME[a.dtype.name][0]
    return {"name": name, "dtype": dt, "shape": list(a.shape), "data": base64.b64encode(a.tobytes(order="C")).decode()}


def build(c, outs=None):
    """The model; with ONNX Runtime's outputs `outs`, its graph outputs typed with their shapes (the
    checker wants a shape on every output, and our importer reads the recorded types)."""
    inputs = [helper.make_tensor_value_info(n, DT_BY_NAME[a.dtype.name][1], list(a.shape)) for n, a in c["inputs"]]
    if outs is None:
        outputs = [helper.make_tensor_value_info(n, t, None) for n, t in c["outputs"]]
    else:
        outputs = [helper.make_tensor_value_info(n, t, list(np.asarray(o).shape)) for (n, t), o in zip(c["outputs"], outs)]
    inits = [numpy_helper.from_array(a, n) for n, a in c["inits"].items()]
    graph = helper.make_graph(c["nodes"], c["name"], inputs, outputs, inits)
    ir = 10 if c["opset"] >= 21 else 9 if c["opset"] >= 19 else 8
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", c["opset"])], ir_version=ir,
                              producer_name="lowerscope onnx_op_cases")
    if outs is not None:
        try:
            onnx.checker.check_model(model)
        except Exception as e:  # ONNX Runtime ran it: keep it, say so
            print(f"warning: {c['name']}: onnx.checker: {str(e).splitlines()[0] if str(e) else type(e).__name__}", flush=True)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    import onnxruntime as ort
    os.makedirs(args.out, exist_ok=True)
    ok, failed = [], []
    for c in CASES:
        if args.only and args.only not in c["name"]:
            continue
        try:
            sess = ort.InferenceSession(build(c).SerializeToString(), providers=["CPUExecutionProvider"])
            feeds = {n: a for n, a in c["inputs"]}
            outs = sess.run([n for n, _ in c["outputs"]], feeds)
            data = build(c, outs).SerializeToString()
            with open(os.path.join(args.out, c["name"] + ".onnx"), "wb") as f:
                f.write(data)
            rec = {"case": c["name"], "format": 2, "op": c["op"], "opset": c["opset"], "rtol": c["rtol"], "atol": c["atol"],
                   "onnx": onnx.__version__, "onnxruntime": ort.__version__,
                   "inputs": [enc(n, a) for n, a in c["inputs"]],
                   "outputs": [enc(n, np.asarray(o)) for (n, _), o in zip(c["outputs"], outs)]}
            with open(os.path.join(args.out, c["name"] + ".json"), "w") as f:
                json.dump(rec, f, indent=1)
            ok.append(c["name"])
        except Exception as e:  # one case's failure must not stop the others
            failed.append(c["name"])
            print(f"FAILED {c['name']} ({c['op']}): {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
            traceback.print_exc(limit=2)
    print(f"{len(ok)} cases written, {len(failed)} failed: {' '.join(failed)}", flush=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"written": ok, "failed": failed}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
