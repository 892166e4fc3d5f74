# Trims a TORCH_TRACE log to what Lowerscope's tests read: drops cache, config and
# intermediate-graph artifacts, symbol records and the chromium events other than dynamo and
# inductor_compile; keeps only the fields the reader uses of compilation_metrics and
# describe_tensor (envelope fields, which no md5 covers); and cuts the kept chromium events' args
# to compile_id, with their payload's md5 made anew. The folder the traced script ran in is
# replaced by /home/user (so no path of the machine that made it stays), payloads' md5 made anew
# where that changes them. Every other kept record is as PyTorch wrote it.
#   python3 trim_trace.py IN.log OUT.log [SCRIPT_DIR] [--drop-output-code]
# --drop-output-code also drops Inductor's output code (inductor_output_code: the largest records,
# for a corpus of many models; the graphs stay, the kernel maps against Inductor go).
import hashlib, json, sys

DROP_ARTIFACTS = {"fx_graph_cache_miss", "fx_graph_cache_hit", "aotautograd_cache_miss", "aotautograd_cache_hit",
                  "fx_graph_runnable", "torch._functorch.config", "aot_forward_graph_fw_metadata",
                  "before_pre_grad_graph", "after_pre_grad_graph", "before_post_grad_graph", "before_joint_graph",
                  "after_joint_graph", "triton_kernel_info"}
DROP_KINDS = {"guard_added_fast", "create_symbol", "bwd_compilation_metrics", "describe_storage", "expression_created",
              "symbolic_shape_specialization", "propagate_real_tensors_provenance", "guard_added"}
KEEP_EVENTS = {"dynamo", "inductor_compile"}

flags = {a for a in sys.argv[1:] if a.startswith("--")}
argv = [a for a in sys.argv if not a.startswith("--")]
if flags - {"--drop-output-code"}:
    sys.exit("trim_trace.py: unknown option " + " ".join(sorted(flags - {"--drop-output-code"})))
if "--drop-output-code" in flags:
    DROP_KINDS = DROP_KINDS | {"inductor_output_code"}
src, dst = argv[1], argv[2]
script_dir = argv[3].rstrip("/") if len(argv) > 3 else None
records, cur = [], None
for line in open(src, encoding="utf-8"):
    if line.startswith("\t") and cur is not None:
        cur[1].append(line)
        continue
    cur = [line, []]
    records.append(cur)
out = []
for head, payload in records:
    at = head.find("] {")
    env = json.loads(head[at + 2:])
    kind = next((k for k, v in env.items() if isinstance(v, dict) or k == "str"), "")
    if kind in DROP_KINDS:
        continue
    if kind == "artifact" and env["artifact"].get("name") in DROP_ARTIFACTS:
        continue
    if kind == "chromium_event":
        ev = json.loads("".join(l[1:] for l in payload))
        if ev.get("name") not in KEEP_EVENTS:
            continue
        ev["args"] = {"compile_id": ev.get("args", {}).get("compile_id")}
        text = json.dumps(ev, indent=0)
        env["has_payload"] = hashlib.md5(text.encode()).hexdigest()
        head = head[:at + 2] + json.dumps(env) + "\n"
        payload = ["\t" + l + "\n" for l in text.split("\n")]
    if kind == "compilation_metrics":
        keep = ("co_name", "co_filename", "co_firstlineno", "graph_op_count", "entire_frame_compile_time_s", "fail_type",
                "fail_reason", "fail_user_frame_filename", "fail_user_frame_lineno", "restart_reasons", "recompile_reason")
        env[kind] = {k: v for k, v in env[kind].items() if k in keep}
        head = head[:at + 2] + json.dumps(env) + "\n"
    if kind == "describe_tensor":
        env[kind] = {k: env[kind][k] for k in ("id", "describer_id", "ndim", "dtype", "device", "size") if k in env[kind]}
        head = head[:at + 2] + json.dumps(env) + "\n"
    if script_dir:
        head = head.replace(script_dir + "/", "/home/user/")
        text = "".join(l[1:] for l in payload).rstrip("\n")
        moved = text.replace(script_dir + "/", "/home/user/")
        if moved != text:
            env = json.loads(head[head.find("] {") + 2:])
            env["has_payload"] = hashlib.md5(moved.encode()).hexdigest()
            head = head[:head.find("] {") + 2] + json.dumps(env) + "\n"
            payload = ["\t" + l + "\n" for l in moved.split("\n")]
    out.append(head)
    out.extend(payload)
open(dst, "w", encoding="utf-8").write("".join(out))
