#!/usr/bin/env python3
"""One test of the zoo's CI subset (tests/zoo/CMakeLists.txt registers one per model and kind):

  run_zoo_case.py CLI MODEL_DIR pt2|onnx|train [--device cpu]

compiles MODEL_DIR/model.pt2 (pt2, train) or MODEL_DIR/model.onnx (onnx) with
`CLI compile ... --device cpu --report R.json` and passes where the CLI exits 0 and its report
shows the checks this kind must have made against PyTorch's files beside the model
(tools/zoo/zoo.py export --ci wrote them; tests/data/zoo/README.md):

  pt2, onnx  the output against out.npy (float32; out64.npy, PyTorch in float64, decides by
             torch._dynamo's RMSE criterion where the elementwise check fails). --no-reference:
             PyTorch's result is the independent reference.
  train      a training step (the joint graph, partitioned): where grad_in*.npy exist (float
             inputs), the gradient of the first output's sum for every input against them
             (grad64_in*.npy as above), the output against out.npy, --no-reference; a model of
             token ids has no input gradient, so the reference interpreter (plain loops in double)
             checks its outputs and parameters' gradients instead, the only check of its backward.

A report without those checks (none made, "not run") fails: a silent pass would hide a model the
CLI stopped checking. Prints the CLI's command, its last lines and each check.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    if len(args) < 3 or args[2] not in ("pt2", "onnx", "train"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    cli, folder, kind = args[:3]
    device = args[args.index("--device") + 1] if "--device" in args else "cpu"
    model = os.path.join(folder, "model.onnx" if kind == "onnx" else "model.pt2")
    if not os.path.exists(model):
        fail(f"{model}: no such file")
    if not os.path.exists(os.path.join(folder, "out.npy")):
        fail(f"{folder}: no out.npy (PyTorch's output), nothing to check against")
    ins = sorted(glob.glob(os.path.join(folder, "in*.npy")))
    grads = bool(ins) and all(os.path.exists(os.path.join(folder, "grad_" + os.path.basename(p))) for p in ins)
    with tempfile.TemporaryDirectory(prefix="ls_zoo_") as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [cli, "compile", model, "--device", device, "--quiet", "--report", report]
        if kind == "train":
            cmd.append("--train")
        if kind != "train" or grads:
            cmd.append("--no-reference")
        print(" ".join(cmd), flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        text = (p.stdout + p.stderr).strip().splitlines()
        for line in text[-15:]:
            print("  " + line)
        if not os.path.exists(report):
            fail(f"exit {p.returncode}, no report")
        r = json.load(open(report))
    chk = r.get("check") or {}
    lines = []
    for what, cs in (("output", chk.get("outputs") or []), ("reference", chk.get("reference") or []),
                     ("gradient", chk.get("gradients") or [])):
        for c in cs:
            name = f"gradient of {c['input']}" if c.get("input") else what
            lines.append((name, str(c.get("against", "")), bool(c.get("ok")), c.get("max_abs_err"), c.get("why") or ""))
    by_reference = [x for x in lines if x[1].startswith("reference interpreter")]
    for name, against, ok, err, why in lines:  # PyTorch's files each, the reference interpreter's failures
        if not ok or not against.startswith("reference interpreter"):
            print(f"  {name} vs {against}: {'ok' if ok else 'FAILED'} (max abs err {err}){'  ' + why if why else ''}")
    if by_reference:
        bad = sum(1 for x in by_reference if not x[2])
        print(f"  {len(by_reference)} checks against the reference interpreter: " + (f"{bad} FAILED" if bad else "all ok"))
    e = r.get("error")
    if e:
        fail("stage " + (f"'{e.get('stage')}': {e.get('message')}" if isinstance(e, dict) else str(e)))
    if r.get("not_run"):
        fail("not run: " + str(r["not_run"]))
    outs = [x for x in lines if x[0] == "output" and os.path.basename(x[1]) == "out.npy"]
    if not outs:
        fail("no check against out.npy in the report")
    if kind == "train":
        if grads:
            n = sum(1 for x in lines if x[0].startswith("gradient of") and os.path.basename(x[1]).startswith("grad_in"))
            if n < len(ins):
                fail(f"{n} gradients checked against grad_in*.npy, {len(ins)} inputs")
        elif not any(x[0] in ("reference", "gradient") or x[0].startswith("gradient of") for x in lines):
            fail("a model without input gradients, and no check against the reference interpreter")
    if p.returncode != 0 or not r.get("ok", chk.get("ok")) or not all(x[2] for x in lines):
        fail(f"exit {p.returncode}, check {'ok' if chk.get('ok') else 'failed'}")
    print(f"ok ({len(lines)} checks; compile {r.get('compile_ms')} ms, run {r.get('run_ms')} ms)")


if __name__ == "__main__":
    main()
