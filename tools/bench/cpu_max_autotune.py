#!/usr/bin/env python3
"""CPU max-autotune against default mode, per fixture graph with matrix multiplies: the whole-model
run time both ways (each a cold `lowerscope-cli compile` with a fresh cache, medians of the app's
own timing), what max-autotune chose per multiply (a BLAS cut or a GEMM template) and what the
tuning cost; then each case's AUTOTUNE table.

    python3 tools/bench/cpu_max_autotune.py --cli build-bench/app/lowerscope-cli [--out results.md] [--external]
"""
import argparse, json, os, subprocess, sys, tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = ["layernorm_gelu", "attn_block", "mlp"]


def compile_once(cli, graph, mode, train, external, cache):
    with tempfile.NamedTemporaryFile(suffix=".json") as rep:
        cmd = [cli, "compile", graph, "--mode", mode, "--report", rep.name] + (["--train"] if train else [])
        cmd += ["--external-compiler"] if external else []
        env = dict(os.environ, LOWERSCOPE_CACHE_DIR=cache)
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(" ".join(cmd) + ": " + p.stderr[-2000:])
        r = json.load(open(rep.name))
        at = p.stdout.find("AUTOTUNE (CPU)")
        r["autotune_table"] = p.stdout[at:p.stdout.find("\nkernel ", at)].strip() if at >= 0 else ""
        return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out")
    ap.add_argument("--external", action="store_true", help="the external compiler path (where the JIT is absent it is the default)")
    a = ap.parse_args()
    rows, tables = [], []
    for case in CASES:
        graph = os.path.join(REPO, "tests/data/stages", case, "3_core_aten.txt")
        for train in (False, True):
            name = case + (" train" if train else "")
            with tempfile.TemporaryDirectory() as cache:
                d = compile_once(a.cli, graph, "default", train, a.external, cache)
            with tempfile.TemporaryDirectory() as cache:
                t = compile_once(a.cli, graph, "max-autotune", train, a.external, cache)
            chosen = [k["name"] + ": " + k["launch"].replace("max-autotune: ", "").replace(" on the pool's threads", "")
                      for k in t["kernels"] if k.get("launch", "").startswith("max-autotune")]
            rows.append((name, d["run_ms"], t["run_ms"], t["run_ms"] / d["run_ms"], d["compile_ms"], t["compile_ms"],
                         "; ".join(chosen) or "the heuristics", "ok" if d["check"]["ok"] and t["check"]["ok"] else "FAILED"))
            print(rows[-1], flush=True)
            if t["autotune_table"]:
                tables.append("### " + name + "\n\n```\n" + t["autotune_table"] + "\n```\n")
    out = ["| case | default ms | max-autotune ms | tuned / default | default compile ms | max-autotune compile ms | chosen | check |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| %s | %.3f | %.3f | %.2fx | %.0f | %.0f | %s | %s |" % r)
    text = "\n".join(out) + "\n\n" + "\n".join(tables)
    print(text)
    if a.out:
        open(a.out, "w").write(text)


if __name__ == "__main__":
    sys.exit(main())
