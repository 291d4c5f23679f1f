"""The LiteRT delegate on the firmware (`TENSORPLUG_DEVICE=mcu-tcp:…`, set
by the test): the converter's int8 convnet with float input and output
(`tflite_delegate.py`'s `float_io`: QUANTIZE, CONV_2D, RESHAPE,
FULLY_CONNECTED, DEQUANTIZE) as one partition, compiled into one device
program that the firmware stores; INVOKES invokes, each bit for bit equal
to TFLite's reference kernels. With `--dynamic`, `tflite_delegate.py`'s
`dynamic` model instead (Keras 3's Flatten without a batch size: its
SHAPE, STRIDED_SLICE and PACK evaluated at prepare, with
`allow_dynamic_tensors`), also one partition.

With `--split`, `tflite_delegate.py`'s float model with SIN in the middle
instead: the default cost model measures the link to the firmware and
keeps the 1-node partition before SIN on the CPU (a round trip costs
more than its 512 flops), the 5-node one on the device; the output
within the float tolerance.

usage: tflite_delegate_mcu.py <work dir> <plugin> [--profile] [--dynamic] [--split]
Prints `program <runs> <commands>`, `input_bytes <n>` and `invokes <n>
bit-exact`; with
`profile_file`, every node's launches are in the trace, named by node.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tflite_delegate as td  # noqa: E402

INVOKES = 4

work, plugin = sys.argv[1], sys.argv[2]
profile = "--profile" in sys.argv[3:]
dynamic = "--dynamic" in sys.argv[3:]
td.use_runtime("tf")


def split_case():
    model = td.model_bytes()
    xs = [np.random.default_rng(3).standard_normal((td.BATCH, 8)).astype(np.float32)]
    want = td.run(td.interpreter(model), xs)
    report_path = os.path.join(work, "report.json")
    got = td.run(td.interpreter(model, [td.rt.load_delegate(plugin, {"report_file": report_path})]),
                 xs)
    if not np.allclose(got[0], want[0], rtol=td.RTOL, atol=td.ATOL):
        td.fail(f"split model on the MCU differs:\n{got[0]}\n{want[0]}")
    with open(report_path) as f:
        report = json.load(f)
    graph, figures = report["graphs"][0], report["cost_model"]
    costs = graph["partition_costs"]
    by_cost = [n["index"] for n in graph["nodes"]
               if n["reason"] and "the cost model keeps" in n["reason"]]
    if len(graph["partitions"]) != 1 or len(costs) != 2 or costs[1]["decision"] != "cpu" \
            or by_cost != costs[1]["nodes"] or figures["link_round_trip_source"] != "measured":
        td.fail(f"split model on the MCU: {graph['partitions']} {costs} {figures}")
    print(f"split: 1 partition, the cost model keeps nodes {by_cost} on the CPU: "
          f"round_trip_us={figures['link_round_trip_us']:.0f} "
          f"mbytes_per_s={figures['link_mbytes_per_s']:.3f} "
          f"estimate {costs[1]['device_us']:.0f} us on the device, {costs[1]['host_us']:.2f} us "
          f"on the host", flush=True)


if "--split" in sys.argv[3:]:
    split_case()
    sys.exit(0)
name = "dynamic" if dynamic else "float_io"
model = td.int8_models(only={name})[name]
ref = td.interpreter(model, reference=True)
shape = tuple(ref.get_input_details()[0]["shape"])
rng = np.random.default_rng(17)
if dynamic:
    xs = [rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(INVOKES)]
else:
    xs = [3 * rng.standard_normal(shape).astype(np.float32) for _ in range(INVOKES)]
want = td.run(ref, xs)
report_path = os.path.join(work, "report.json")
trace_path = os.path.join(work, "trace.json")
options = {"report_file": report_path}
if dynamic:
    options["allow_dynamic_tensors"] = "true"
if profile:
    options["profile_file"] = trace_path
delegate = td.rt.load_delegate(plugin, options)
got = td.run(td.interpreter(model, [delegate], reference=True), xs)
for g, w in zip(got, want):
    if not np.array_equal(g.view(np.uint8), w.view(np.uint8)):
        td.fail(f"the delegate on the MCU differs from the reference:\n{g}\n{w}")
with open(report_path) as f:
    graph = json.load(f)["graphs"][0]
if any(n["decision"] != "device" or n["device_runs"] != INVOKES for n in graph["nodes"]):
    td.fail(f"not every node ran on the device {INVOKES} times: {graph['nodes']}")
if profile:
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    # A RESHAPE is a copy and a folded node no work: neither is traced.
    for n in (n for n in graph["nodes"] if n["op"] != "RESHAPE" and n["folded"] is None):
        named = [e for e in events if e["name"] == f"{n['op']} (node {n['index']})"]
        if len(named) < INVOKES:
            td.fail(f"node {n['index']} ({n['op']}): {len(named)} device events in {INVOKES} invokes")
    print(f"trace: every launch named by its node, {len(events)} events", flush=True)
(program,) = graph["programs"]
print(f"program {program['runs']} {program['commands']}", flush=True)
print(f"input_bytes {xs[0].nbytes}", flush=True)
print(f"invokes {INVOKES} bit-exact", flush=True)
