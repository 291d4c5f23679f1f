"""The pluggable profiler end to end: tf.profiler on /device:FPGA:0, the
written .xplane.pb read with TF's xplane_pb2, and converted with xprof's own
tools (trace viewer, framework op stats, overview page, op profile).

usage: tf_profiler_scenarios.py <model | two_devices | pairing | no_fpga_ops | cycles N MAX_GROWTH_MIB>
Prints `ok: ...` on success; exits non-zero naming the first failed check.
"""
import contextlib
import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_registry
from tensorflow.tsl.profiler.protobuf import xplane_pb2

# Every scratch directory of this run lives here, removed at exit.
SCRATCH = tempfile.TemporaryDirectory(prefix="tensorplug-test-")

FPGA = "/device:FPGA:0"
PLANE_PREFIX = "/device:GPU:"
PLANE_BASE = 1000  # our planes are /device:GPU:<1000 + ordinal> (docs/xspace-layout.md)
RUNS = 3


def check(cond, msg):
    if not cond:
        print(f"FAILED: {msg}", file=sys.stderr)
        sys.exit(1)


def profile(body):
    logdir = tempfile.mkdtemp(prefix="tensorplug-prof-", dir=SCRATCH.name)
    tf.profiler.experimental.start(logdir)
    body()
    tf.profiler.experimental.stop()
    paths = sorted(glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb")))
    check(len(paths) == 1, f"expected one .xplane.pb in {logdir}, found {paths}")
    space = xplane_pb2.XSpace()
    with open(paths[0], "rb") as f:
        space.ParseFromString(f.read())
    return paths[0], space


def profiled_ops(run):
    """`run()` under tf.profiler: how many of each op type ran on the
    FPGA's plane and on TF's CPU executor."""
    return ops_in(profile(run)[1])


# The commands a program's fusion makes, which no TF op is named after
# (docs/device-programs.md, "Fusion").
FUSED = {"LayerNorm", "Gelu"}


def ops_in(space):
    """A profile's op counts: (on the FPGA's plane, on TF's CPU executor)."""
    device, cpu = {}, {}
    for plane in space.planes:
        ours = plane.name.startswith(PLANE_PREFIX)
        if not (ours or plane.name == "/host:CPU"):
            continue
        for line in plane.lines:
            for event in line.events:
                tf_op = stats(plane, event).get("tf_op", "") if ours else ""
                name_ = tf_op or plane.event_metadata[event.metadata_id].name
                if ":" not in name_:
                    continue
                kind = name_.rsplit(":", 1)[1].strip()
                if op_def_registry.get(kind) is None and kind not in FUSED:
                    continue  # tf.data's and the executor's own events
                counts = device if ours else cpu
                counts[kind] = counts.get(kind, 0) + 1
    return device, cpu


def host_api(space):
    """How many of each host call (`HostLaunch`, `HostCopy`, `HostSync`) the
    FPGA's plane shows."""
    counts = {}
    for plane in space.planes:
        if not plane.name.startswith(PLANE_PREFIX):
            continue
        for line in plane.lines:
            if line.name != "Host API":
                continue
            for event in line.events:
                name_ = plane.event_metadata[event.metadata_id].name
                counts[name_] = counts.get(name_, 0) + 1
    return counts


def plane_name(ordinal):
    return f"{PLANE_PREFIX}{PLANE_BASE + ordinal}"


def stats(plane, holder):
    """Stats by name; a ref_value resolves to its stat metadata's name."""
    out = {}
    for stat in holder.stats:
        kind = stat.WhichOneof("value")
        value = getattr(stat, kind)
        if kind == "ref_value":
            value = plane.stat_metadata[value].name
        out[plane.stat_metadata[stat.metadata_id].name] = value
    return out


def scopes_in_order(names):
    """Collapses consecutive events of the same name scope: d1 d1 d2 d1 -> d1 d2 d1."""
    out = []
    for name in names:
        scope = name.split("/")[0]
        if not out or out[-1] != scope:
            out.append(scope)
    return out


# When a launch's device commands may run, on TF's clock. Kernels are
# asynchronous: a launch span only enqueues, so its op may run after later
# launches and after the span ended. Lower bound: no command begins before
# its launch span began, give or take the sync pairs' error of +-10 us (half
# of SYNC_GOOD_WINDOW_NS in host-bridge/src/profiler/clock.rs). Upper bound:
# every command ends before the end of the first host copy that begins after
# its launch: in these scenarios every such copy is the device-to-host read
# of a result (`.numpy()`), which waits for all earlier work of the device,
# so an op shown later than that is a clock error. How long an op waited is
# reported, not bounded: it is the sim model thread's scheduling on a loaded
# machine (docs/profiler-plugin.md, "Launch to op").
LAUNCH_SLACK_NS = 10_000
# Tag 0 ("unprofiled op") is what a command enqueued while no profile was
# recorded carries, or one through a device that drops the tags of fills and
# copies (the MCU link's): no launch span of this profile is its.
UNLAUNCHED_TAG = 0
OP_METADATA_BASE = 1000


def launch_offsets(plane, slack_ns=LAUNCH_SLACK_NS, raw=False):
    """Pairs every HostLaunch span of `plane` with its device commands and
    returns each launch's start delay in ns: from when its first command
    could start (its launch began and the queue's previous command ended)
    to when it began.

    The queue is FIFO, so launch k owns the k-th non-empty run of commands
    on Queue 0, all with one op tag (a launch is one TF node; `lower` may
    split it into several commands, each carrying the tag). The xplane does
    not show a launch span's tag, so this looks for a split of the command
    sequence into one run per launch, in order, that keeps each run to one
    tag and each launch's commands within the bounds above; the split is
    ambiguous only where one node is launched several times in a row. It
    fails if none exists: a launch without its op, an op without a launch,
    an op before its launch or after the read that waited for it (by more
    than `slack_ns`). Commands of one queue must not overlap. With `raw`,
    each offset is from the launch itself, unclamped: negative where the
    device's clock puts the op before its launch.
    """
    lines = {line.name: line for line in plane.lines}
    queue, host_api = lines.get("Queue 0"), lines.get("Host API")
    check(queue is not None and host_api is not None,
          f"{plane.name} has Queue 0 and Host API lines: {sorted(lines)}")
    name = lambda e: plane.event_metadata[e.metadata_id].name
    ns = lambda line, e: line.timestamp_ns + e.offset_ps // 1000
    spans = lambda kind: sorted((ns(host_api, e), ns(host_api, e) + e.duration_ps // 1000)
                                for e in host_api.events if name(e) == kind)
    launches = [begin for begin, _ in spans("HostLaunch")]
    copies = spans("HostCopy")
    commands = sorted((ns(queue, e), ns(queue, e) + e.duration_ps // 1000,
                       e.metadata_id - OP_METADATA_BASE, name(e))
                      for e in queue.events
                      if e.metadata_id != OP_METADATA_BASE + UNLAUNCHED_TAG)
    for before, after in zip(commands, commands[1:]):
        check(after[0] >= before[1],
              f"{plane.name}: {after[3]} at {after[0]} overlaps {before[3]} ending {before[1]}")
    read_ends = []
    for k, launch in enumerate(launches):
        read = next((end for begin, end in copies if begin >= launch), None)
        check(read is not None, f"{plane.name}: no device-to-host read after launch {k}")
        read_ends.append(read)

    def fits(k, i, j):
        """Whether commands i..j-1 can be launch k's."""
        return (commands[i][0] >= launches[k] - slack_ns
                and commands[j - 1][1] <= read_ends[k] + slack_ns)

    memo = {}

    def split(k, i):
        """Start delays of launches k.. when launch k's run starts at command
        i, or None if no split of commands i.. fits."""
        if k == len(launches):
            return [] if i == len(commands) else None
        if (k, i) not in memo:
            memo[(k, i)] = None
            ready = max(launches[k], commands[i - 1][1] if i > 0 else 0)
            j = i + 1
            while i < len(commands) and j <= len(commands):
                rest = split(k + 1, j) if fits(k, i, j) else None
                if rest is not None:
                    delay = (commands[i][0] - launches[k] if raw
                             else max(commands[i][0] - ready, 0))
                    memo[(k, i)] = [delay] + rest
                    break
                if j == len(commands) or commands[j][2] != commands[i][2]:
                    break
                j += 1
        return memo[(k, i)]

    offsets = split(0, 0)
    check(offsets is not None,
          f"{plane.name}: no split of the {len(commands)} device commands into runs "
          f"for the {len(launches)} launches fits tags and bounds (a launch has no "
          f"device op, an op has no launch, begins before its launch or ends after "
          f"the read that waited for it)")
    return offsets


def synthetic_plane(launches, reads, commands):
    """A device plane with HostLaunch spans at `launches`, HostCopy spans
    `reads` and Queue 0 `commands` (begin, end, tag); ns from 0."""
    plane = xplane_pb2.XPlane(name=plane_name(0))
    plane.event_metadata[4].name = "HostLaunch"
    plane.event_metadata[5].name = "HostCopy"
    host = plane.lines.add(name="Host API")
    for begin in launches:
        host.events.add(metadata_id=4, offset_ps=begin * 1000, duration_ps=1000)
    for begin, end in reads:
        host.events.add(metadata_id=5, offset_ps=begin * 1000, duration_ps=(end - begin) * 1000)
    queue = plane.lines.add(name="Queue 0")
    for begin, end, tag in commands:
        plane.event_metadata[OP_METADATA_BASE + tag].name = f"op{tag}"
        queue.events.add(metadata_id=OP_METADATA_BASE + tag, offset_ps=begin * 1000,
                         duration_ps=(end - begin) * 1000)
    return plane


def scenario_pairing():
    """launch_offsets on made-up planes: accepts what asynchronous FIFO
    launches produce and rejects each kind of mispairing."""
    launches, reads = [0, 100_000, 200_000], [(900_000, 1_000_000)]
    good = [(50_000, 60_000, 1), (300_000, 310_000, 2), (310_000, 320_000, 2),
            (400_000, 410_000, 3)]
    check(launch_offsets(synthetic_plane(launches, reads, good)) == [50_000, 200_000, 80_000],
          "ops running after later launches pair in FIFO order")
    repeated = [(150_000, 160_000, 1), (250_000, 260_000, 1), (260_000, 270_000, 1)]
    check(len(launch_offsets(synthetic_plane(launches, reads, repeated))) == 3,
          "one node launched three times in a row")
    no_split, overlap = "no split of the", "overlaps op2"
    bad = {
        "a launch without an op": (launches, good[:2], no_split),
        "an op before its launch": (launches, [good[0], (80_000, 90_000, 2), good[3]], no_split),
        "an op after the read": (launches, [good[0], good[1], (1_200_000, 1_210_000, 3)],
                                 no_split),
        "an op without a launch": (launches[:2], [good[0], good[1], good[3]], no_split),
        "overlapping ops": (launches, [good[0], good[1], (305_000, 320_000, 3)], overlap),
    }
    for case, (at, commands, reason) in bad.items():
        captured = io.StringIO()
        try:
            with contextlib.redirect_stderr(captured):
                launch_offsets(synthetic_plane(at, reads, commands))
        except SystemExit:
            check(reason in captured.getvalue(), f"{case}: rejected as {captured.getvalue()}")
            continue
        check(False, f"launch_offsets accepted {case}")
    print(f"ok: pairing accepts 2 valid planes and rejects {len(bad)} mispairings")


def describe(offsets):
    us = sorted(o / 1000 for o in offsets)
    return f"start delay {us[0]:.0f}/{us[len(us) // 2]:.0f}/{us[-1]:.0f} us (min/median/max)"


def mlp():
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(s).astype(np.float32)
              for s in [(32, 64), (64, 128), (128,), (128, 10), (10,)]]
    with tf.device(FPGA):
        tensors = [tf.constant(v) for v in values]

    @tf.function
    def model(x, w1, b1, w2, b2):
        with tf.name_scope("dense1"):
            h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
        with tf.name_scope("dense2"):
            return tf.nn.softmax(tf.nn.bias_add(tf.matmul(h, w2), b2))

    def run():
        with tf.device(FPGA):
            return model(*tensors).numpy()

    return run


def scenario_model():
    run = mlp()
    run()  # trace and optimize outside the profile
    path, space = profile(lambda: [run() for _ in range(RUNS)])
    planes = [p for p in space.planes if p.name.startswith(PLANE_PREFIX)]
    check([p.name for p in planes] == [plane_name(0)],
          f"one device plane, got {[p.name for p in space.planes]}")
    plane = planes[0]
    host = [p for p in space.planes if p.name == "/host:CPU"]
    check(len(host) == 1, "TF's host plane is there")
    host_times = [line.timestamp_ns + e.offset_ps // 1000
                  for line in host[0].lines for e in line.events]
    lo, hi = min(host_times), max(host_times)

    lines = {line.name: line for line in plane.lines}
    queue = lines.get("Queue 0")
    check(queue is not None, f"a line for queue 0, got {sorted(lines)}")
    events = sorted(queue.events, key=lambda e: e.offset_ps)
    names = [plane.event_metadata[e.metadata_id].name for e in events]
    check(all(n.startswith(("dense1/", "dense2/")) for n in names),
          f"device events are named after the TF nodes: {names}")
    check(scopes_in_order(names) == ["dense1", "dense2"] * RUNS,
          f"dense1 then dense2, {RUNS} times: {names}")
    end = 0
    for event, name in zip(events, names):
        check(event.duration_ps > 0, f"{name} has a duration")
        check(event.offset_ps >= end, f"{name} overlaps the op before it")
        end = event.offset_ps + event.duration_ps
        at = queue.timestamp_ns + event.offset_ps // 1000
        check(lo - 50_000_000 <= at <= hi + 50_000_000,
              f"{name} at {at} ns is on TF's clock (host plane spans {lo}..{hi})")
        meta = stats(plane, plane.event_metadata[event.metadata_id])
        tf_op = stats(plane, event).get("tf_op", "")
        check(tf_op.startswith(name + ":"), f"{name}: tf_op on the event: {tf_op!r}")
        meta["tf_op"] = tf_op
        check(meta.get("bytes_accessed", 0) > 0, f"{name}: bytes_accessed {meta}")
        if "MatMul" in meta["tf_op"]:
            check(meta.get("flops", 0) > 0, f"{name}: flops {meta}")
    host_api = lines.get("Host API")
    check(host_api is not None, "a Host API line")
    copies = [e for e in host_api.events
              if plane.event_metadata[e.metadata_id].name == "HostCopy"]
    check(copies and all(stats(plane, e).get("bytes_transferred", 0) > 0 for e in copies),
          "host copies carry bytes_transferred")
    offsets = launch_offsets(plane)

    # xprof's own tools, on the file TF wrote.
    shown = check_trace_viewer(path, plane_name(0), names)
    tf_ops = {stats(plane, e)["tf_op"] for e in events}
    tools = check_op_tools(path, tf_ops)
    # A made-up real GPU's plane beside ours: both keep their own rows.
    gpu_path = with_made_up_gpu_plane(space)
    check_trace_viewer(gpu_path, plane_name(0), names)
    check_op_tools(gpu_path, tf_ops | {MADE_UP_GPU_OP})
    print(f"ok: {len(names)} device ops in {RUNS} runs, {len(copies)} host copies, "
          f"xprof shows {len(shown)} ops on {plane_name(0)} in the trace viewer and "
          f"{tools}, also beside a made-up /device:GPU:0; {describe(offsets)}; "
          f"ops: {sorted(set(names))}; fit: {check_fit_named()} device commands, all named")


def check_fit_named():
    """A Keras `fit` with Adam under the profiler: every device command,
    the fills and copies of its kernels too (Adam's slots, the optimizer's
    reads), carries its TF node's name; none is "unprofiled op"; and each
    has its launch span."""
    import keras

    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(4, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", jit_compile=False)
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((64, 16)).astype(np.float32), rng.integers(0, 4, 64)
    with tf.device(FPGA):
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        _, space = profile(lambda: model.fit(x, y, batch_size=32, epochs=1, verbose=0))
    plane = [p for p in space.planes if p.name.startswith(PLANE_PREFIX)][0]
    queue = [line for line in plane.lines if line.name == "Queue 0"][0]
    names = [plane.event_metadata[e.metadata_id].name for e in queue.events]
    unnamed = sum(n == "unprofiled op" for n in names)
    check(names and not unnamed, f"fit: {unnamed} of {len(names)} device commands unnamed")
    launch_offsets(plane, slack_ns=5_000_000)
    return len(names)


def xprof_tool(path, tool):
    """xprof's converter `tool` on the XSpace at `path`, as JSON. Where xprof
    cannot be installed beside this TF (TF 2.15-2.18 pin a protobuf older
    than xprof's), it runs in TENSORPLUG_XPROF_PYTHON's venv (the newest TF's,
    set by `cargo xtask test`) on the file this TF wrote."""
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError:
        other = os.environ.get("TENSORPLUG_XPROF_PYTHON")
        check(other, f"xprof is not installed beside TF {tf.__version__} and "
                     "TENSORPLUG_XPROF_PYTHON is not set")
        code = ("import sys; from xprof.convert import raw_to_tool_data as r; "
                "d, _ = r.xspace_to_tool_data([sys.argv[1]], sys.argv[2], {}); "
                "sys.stdout.write(d if isinstance(d, str) else d.decode())")
        data = subprocess.run([other, "-c", code, path, tool], check=True, capture_output=True,
                              text=True).stdout
    else:
        data, _ = raw_to_tool_data.xspace_to_tool_data([path], tool, {})
    check(data, f"xprof converted the XSpace to {tool} data")
    return json.loads(data)


def check_trace_viewer(path, plane, names):
    """The trace viewer shows `plane` as its own process with `names`, in order."""
    trace = xprof_tool(path, "trace_viewer")
    processes = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
                 if e.get("ph") == "M" and e.get("name") == "process_name"}
    ours = [pid for pid, name in processes.items() if name == plane]
    check(len(ours) == 1, f"xprof shows our plane; processes: {processes}")
    shown = sorted((e for e in trace["traceEvents"]
                    if e.get("ph") == "X" and e.get("pid") == ours[0]
                    and e["name"].startswith(("dense1/", "dense2/"))),
                   key=lambda e: e["ts"])
    check(len(shown) == len(names), f"xprof shows {len(shown)} of our {len(names)} ops")
    check([e["name"] for e in shown] == names, "xprof keeps the device order")
    check(all(e["dur"] > 0 for e in shown), "xprof durations > 0")
    return shown


def check_op_tools(path, tf_ops):
    """framework_op_stats, op_profile and overview_page each list exactly
    `tf_ops` ("name:Type") as device ops with device time."""
    want = {op.split(":")[0] for op in tf_ops}
    table = xprof_tool(path, "framework_op_stats")
    table = table[0] if isinstance(table, list) else table
    cols = [c["id"] for c in table["cols"]]
    rows = [dict(zip(cols, (c.get("v") for c in r["c"]))) for r in table["rows"]]
    device = {r["operation"]: r for r in rows
              if r["host_or_device"] == "Device" and r["type"] != "IDLE"}
    check(set(device) == want, f"framework_op_stats device rows {sorted(device)} != {sorted(want)}")
    check(all(r["total_time"] > 0 and r["occurrences"] > 0 for r in device.values()),
          f"framework_op_stats: device time and count for every op: {device}")

    found = {}

    def walk(node):
        xla = node.get("xla")
        if xla and xla.get("provenance"):
            found[xla["provenance"]] = node["metrics"].get("rawTime", 0)
        for child in node.get("children", []):
            walk(child)
    walk(xprof_tool(path, "op_profile")["byProgram"])
    check(set(found) == set(tf_ops), f"op_profile ops {sorted(found)} != {sorted(tf_ops)}")
    check(all(t > 0 for t in found.values()), f"op_profile: device time for every op: {found}")

    overview = xprof_tool(path, "overview_page")
    top = overview[0]
    names = {dict(zip([c["id"] for c in top["cols"]], (c.get("v") for c in r["c"])))["operation"]
             for r in top["rows"]}
    check(names == want, f"overview page top device ops {sorted(names)} != {sorted(want)}")
    check(float(top["p"]["device_tf_op_percent"].rstrip("%")) > 0,
          f"overview page: device TF op time {top['p']}")
    return (f"{len(device)} device rows in framework_op_stats, op_profile and the "
            f"overview page")


MADE_UP_GPU_OP = "gpu/Conv2D:Conv2D"


def with_made_up_gpu_plane(space):
    """The profile plus a plane like a real GPU's (/device:GPU:0, id 0) with
    one op, written to a new file."""
    gpu = xplane_pb2.XSpace()
    gpu.CopyFrom(space)
    plane = gpu.planes.add(name="/device:GPU:0", id=0)
    plane.stat_metadata[1].id = 1
    plane.stat_metadata[1].name = "tf_op"
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = "gpu/Conv2D"
    ours = [p for p in space.planes if p.name == plane_name(0)][0]
    line = plane.lines.add(id=1, name="Stream #1", timestamp_ns=ours.lines[0].timestamp_ns)
    event = line.events.add(metadata_id=1, offset_ps=1_000_000, duration_ps=5_000_000)
    event.stats.add(metadata_id=1, str_value=MADE_UP_GPU_OP)
    path = os.path.join(tempfile.mkdtemp(prefix="tensorplug-gpu-", dir=SCRATCH.name), "vm.xplane.pb")
    with open(path, "wb") as f:
        f.write(gpu.SerializeToString())
    return path


def scenario_two_devices():
    """TENSORPLUG_DEVICE=sim,sim: each device's plane gets its own host spans."""
    x = np.linspace(-1, 1, 1024, dtype=np.float32)
    runs = {0: 2, 1: 3}  # different counts, so a misplaced span shows

    def body():
        for ordinal, count in runs.items():
            with tf.device(f"/device:FPGA:{ordinal}"):
                t = tf.constant(x)
                for _ in range(count):
                    tf.nn.relu(t).numpy()

    body()  # first use outside the profile
    _, space = profile(body)
    planes = {p.name: p for p in space.planes if p.name.startswith(PLANE_PREFIX)}
    check(sorted(planes) == [plane_name(0), plane_name(1)],
          f"one plane per device, got {sorted(planes)}")
    report = []
    for ordinal, count in runs.items():
        plane = planes[plane_name(ordinal)]
        host_api = [line for line in plane.lines if line.name == "Host API"]
        check(host_api, f"{plane.name} has its own Host API line")
        kinds = [plane.event_metadata[e.metadata_id].name for e in host_api[0].events]
        check(kinds.count("HostLaunch") == count,
              f"{plane.name}: {kinds.count('HostLaunch')} launch spans, want {count}")
        check("HostCopy" in kinds, f"{plane.name}: its host copies are on it: {kinds}")
        offsets = launch_offsets(plane)
        check(len(offsets) == count, f"{plane.name}: {len(offsets)} ops, want {count}")
        report.append(f"{plane.name}: {count} launches, {kinds.count('HostCopy')} copies, "
                      f"{describe(offsets)}")
    print("ok: host spans per device; " + "; ".join(report))


def scenario_no_fpga_ops():
    def cpu_only():
        with tf.device("/device:CPU:0"):
            tf.matmul(tf.ones((8, 8)), tf.ones((8, 8))).numpy()
    _, space = profile(cpu_only)
    names = [p.name for p in space.planes]
    check(not any(n.startswith(PLANE_PREFIX) for n in names),
          f"no device plane without FPGA work: {names}")
    check("/host:CPU" in names, f"TF still wrote its host plane: {names}")
    print(f"ok: planes {names}")


def scenario_switch_off():
    """TENSORPLUG_PROFILER=off, read at every start: TF profiles, our
    plugin traces no device; back on in the same process, it does again."""
    def fpga_relu():
        with tf.device(FPGA):
            tf.nn.relu(tf.constant(np.linspace(-1, 1, 64, dtype=np.float32))).numpy()
    found = {}
    for setting in ("off", "on"):
        os.environ["TENSORPLUG_PROFILER"] = setting
        _, space = profile(fpga_relu)
        names = [p.name for p in space.planes]
        found[setting] = [n for n in names if n.startswith(PLANE_PREFIX)]
        check("/host:CPU" in names, f"{setting}: TF still wrote its host plane: {names}")
    check(not found["off"], f"no device plane when off: {found['off']}")
    check(found["on"], "a device plane when switched back on")
    print(f"ok: device planes off {found['off']}, on {found['on']}")


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    check(False, "no VmRSS")


def busy_loops(count):
    """`count` processes that each keep a core busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(count)]


def offsets_under_load(runs, slack_ns):
    """The MLP `runs` times under the profiler while two busy loops load
    both cores: each launch's first device op begin minus the launch's
    begin, in ns, raw (negative: the device clock's mapping put the op
    before its launch)."""
    run = mlp()
    run()
    loops = busy_loops(2)
    try:
        _, space = profile(lambda: [run() for _ in range(runs)])
    finally:
        for p in loops:
            p.kill()
            p.wait()
    planes = [p for p in space.planes if p.name.startswith(PLANE_PREFIX)]
    check(len(planes) == 1, f"one device plane, got {[p.name for p in space.planes]}")
    return launch_offsets(planes[0], slack_ns=slack_ns, raw=True)


def scenario_under_load(runs):
    """With both cores busy, no device op begins before its
    launch (within LAUNCH_SLACK_NS). The pairing is searched with a 5 ms
    slack so that a bad clock shows as a figure, not only as no pairing."""
    offsets = offsets_under_load(runs, slack_ns=5_000_000)
    early = [o for o in offsets if o < -LAUNCH_SLACK_NS]
    us = sorted(o / 1000 for o in offsets)
    summary = (f"{len(offsets)} launches, op begin - launch begin "
               f"{us[0]:.1f}/{us[len(us) // 100]:.1f}/{us[len(us) // 2]:.1f} us "
               f"(min/p1/median)")
    check(not early, f"{len(early)} device ops begin before their launch: {summary}")
    print(f"ok: under load, {summary}")


def scenario_cycles(cycles, max_growth_mib):
    logdir = tempfile.mkdtemp(prefix="tensorplug-cycles-", dir=SCRATCH.name)
    with tf.device(FPGA):
        x = tf.constant(np.linspace(-1, 1, 1024, dtype=np.float32))
    warmup = 10
    rss = {}
    # `cargo xtask soak`: samples for its plot.
    samples = os.environ.get("TENSORPLUG_SOAK_CSV")
    out = open(samples, "w") if samples else None
    if out:
        out.write("seconds,cycle,rss_kib,fds,threads\n")
    start = time.time()
    for cycle in range(1, cycles + 1):
        tf.profiler.experimental.start(logdir)
        with tf.device(FPGA):
            tf.nn.relu(x).numpy()
        tf.profiler.experimental.stop()
        if cycle in (warmup, cycles):
            rss[cycle] = rss_mib()
        if out and cycle % max(cycles // 100, 1) == 0:
            threads = sum(1 for _ in os.listdir("/proc/self/task"))
            out.write(f"{time.time() - start:.1f},{cycle},{rss_mib() * 1024:.0f},"
                      f"{len(os.listdir('/proc/self/fd'))},{threads}\n")
            out.flush()
        if cycle % 100 == 0:
            # Each cycle's profile stays on disk; keep only the newest.
            for old in sorted(glob.glob(os.path.join(logdir, "plugins/profile/*")))[:-1]:
                shutil.rmtree(old, ignore_errors=True)
    growth = rss[cycles] - rss[warmup]
    check(growth <= max_growth_mib,
          f"RSS grew {growth:.1f} MiB from cycle {warmup} to {cycles} "
          f"(bound {max_growth_mib} MiB)")
    # The last cycle still produced our plane with the relu on it.
    paths = sorted(glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb")))
    space = xplane_pb2.XSpace()
    with open(paths[-1], "rb") as f:
        space.ParseFromString(f.read())
    planes = [p for p in space.planes if p.name.startswith(PLANE_PREFIX)]
    check(planes and any(line.name == "Queue 0" for line in planes[0].lines),
          "the last cycle recorded device ops")
    print(f"ok: {cycles} cycles, RSS {rss[warmup]:.1f} -> {rss[cycles]:.1f} MiB "
          f"(growth {growth:.1f} MiB, bound {max_growth_mib})")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "model":
        scenario_model()
    elif mode == "two_devices":
        scenario_two_devices()
    elif mode == "pairing":
        scenario_pairing()
    elif mode == "no_fpga_ops":
        scenario_no_fpga_ops()
    elif mode == "switch_off":
        scenario_switch_off()
    elif mode == "under_load":
        scenario_under_load(int(sys.argv[2]))
    elif mode == "cycles":
        scenario_cycles(int(sys.argv[2]), float(sys.argv[3]))
    else:
        check(False, f"unknown scenario {mode}")
