"""Multi-worker training on simulated FPGAs, on TF's own runtime.

Two worker processes on localhost (`TF_CONFIG`), each with its own `sim`
device registered as `GPU` (`TENSORPLUG_AS_GPU=1`), train a Keras model under
`tf.distribute.MultiWorkerMirroredStrategy()` called as TF's guide calls it,
with no device list. The losses and final weights must equal a one-worker
run over the same global batches.

  python tf_multi_worker.py                          # the test: all parts
  python tf_multi_worker.py loop|fit|kill|mirrored   # one part
  python tf_multi_worker.py role ...         # internal: one process

Needs TF_PLUGGABLE_DEVICE_LIBRARY_PATH. Docs: docs/multi-worker.md.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

GLOBAL_BATCH = 16
# More steps for a step-time measurement (docs/multi-worker.md).
STEPS = int(os.environ.get("TF_MULTI_WORKER_STEPS", "4"))
EXAMPLES = GLOBAL_BATCH * STEPS
# The kill part: how long the survivor may take to fail (TF's collective
# health check probes peers every 30 s; see docs/multi-worker.md).
KILL_BOUND_S = 90


def data():
    import numpy as np

    rng = np.random.default_rng(7)
    x = rng.random((EXAMPLES, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, EXAMPLES).astype(np.int64)
    return x, y


def build_model(keras):
    """The model of TF's multi-worker Keras guide, smaller."""
    keras.utils.set_random_seed(1)
    return keras.Sequential([
        keras.Input(shape=(28, 28)),
        keras.layers.Reshape((28, 28, 1)),
        keras.layers.Conv2D(8, 3, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(10),
    ])


def check_devices(tf, strategy, expect_workers):
    local = strategy.extended.worker_devices
    assert all("/device:GPU:" in d for d in local), (
        f"the strategy picked {local}, not the FPGA registered as GPU")
    assert strategy.num_replicas_in_sync == expect_workers, strategy.num_replicas_in_sync
    details = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
    return local, details


def run_loop(out, workers):
    """A custom loop: `strategy.run` + an all-reduce of the gradients."""
    import numpy as np
    import tensorflow as tf
    keras = tf.keras

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    local, details = check_devices(tf, strategy, workers)
    x, y = data()

    def dataset_fn(ctx):
        per_replica = ctx.get_per_replica_batch_size(GLOBAL_BATCH)
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        ds = ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        return ds.batch(per_replica)

    with strategy.scope():
        model = build_model(keras)
        optimizer = keras.optimizers.SGD(0.05)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="none")

    @tf.function
    def train_step(inputs):
        def step_fn(batch):
            bx, by = batch
            with tf.GradientTape() as tape:
                per_example = loss_fn(by, model(bx, training=True))
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        per_replica = strategy.run(step_fn, args=(inputs,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    dist = strategy.distribute_datasets_from_function(dataset_fn)
    losses, times = [], []
    for step, batch in enumerate(dist):
        start = time.perf_counter()
        if step == STEPS - 1:
            # The last step under the profiler: which ops ran on the device.
            logdir = out + ".profile"
            tf.profiler.experimental.start(logdir)
            losses.append(float(train_step(batch)))
            tf.profiler.experimental.stop()
        else:
            losses.append(float(train_step(batch)))
            times.append(time.perf_counter() - start)
    device_ops = device_ops_in(logdir)
    weights = [w.numpy().tolist() for w in model.weights]
    inner = getattr(model.weights[0], "value", None)  # Keras 3: the tf.Variable
    var_device = (inner if inner is not None and not callable(inner) else model.weights[0]).device
    json.dump({"losses": losses, "weights": weights, "local": list(local),
               "details": details, "var_device": str(var_device),
               "device_ops": device_ops, "step_s": step_time(times)}, open(out, "w"))


def step_time(times):
    """The median step time after the first (which traces), in seconds."""
    rest = sorted(times[1:])
    return rest[len(rest) // 2] if rest else None


def device_ops_in(logdir):
    """{tf_op: count} of the events on the device planes of a profile."""
    import glob
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
    counts = {}
    for path in glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb")):
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
        for plane in space.planes:
            if not plane.name.startswith("/device:"):
                continue
            names = {m.id: m.name for m in plane.stat_metadata.values()}
            for line in plane.lines:
                for event in line.events:
                    for stat in event.stats:
                        if names.get(stat.metadata_id) == "tf_op":
                            op = stat.str_value or plane.stat_metadata[stat.ref_value].name
                            counts[op] = counts.get(op, 0) + 1
    return counts


def keras2():
    """Keras 2: tf_keras beside Keras 3, else TF's own (TF 2.15)."""
    import tensorflow as tf
    try:
        import tf_keras
        return tf_keras
    except ImportError:
        import keras
        assert keras.__version__.startswith("2."), keras.__version__
        return tf.keras


def run_fit(out, workers):
    """`fit` through Keras 2: Keras 3's `fit` does not run under this
    strategy (docs/multi-worker.md)."""
    import tensorflow as tf
    keras = keras2()

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    local, details = check_devices(tf, strategy, workers)
    x, y = data()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    ds = ds.with_options(options)
    with strategy.scope():
        model = build_model(keras)
        model.compile(optimizer=keras.optimizers.SGD(0.05),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    losses = []
    record = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: losses.append(float(logs["loss"])))
    model.fit(ds, epochs=1, verbose=0, callbacks=[record])
    weights = [w.numpy().tolist() for w in model.weights]
    json.dump({"losses": losses, "weights": weights, "local": list(local),
               "details": details}, open(out, "w"))


def run_single(kind, out):
    """The one-worker reference: no strategy, the same global batches, the
    same device (`GPU:0`, the FPGA)."""
    import tensorflow as tf
    keras = tf.keras if kind == "loop" else keras2()
    x, y = data()
    model = build_model(keras)
    optimizer = keras.optimizers.SGD(0.05)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    @tf.function
    def step_fn(bx, by):
        with tf.GradientTape() as tape:
            loss = loss_fn(by, model(bx, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    losses, times = [], []
    seen_sum = 0.0
    for step in range(STEPS):
        bx = x[step * GLOBAL_BATCH:(step + 1) * GLOBAL_BATCH]
        by = y[step * GLOBAL_BATCH:(step + 1) * GLOBAL_BATCH]
        if kind == "loop":
            # The shard-then-batch order of the loop's dataset_fn.
            bx = tf.concat([bx[0::2], bx[1::2]], 0)
            by = tf.concat([by[0::2], by[1::2]], 0)
        start = time.perf_counter()
        loss = float(step_fn(bx, by))
        times.append(time.perf_counter() - start)
        # fit's logged loss is the running mean over the epoch.
        seen_sum += loss
        losses.append(loss if kind == "loop" else seen_sum / (step + 1))
    weights = [w.numpy().tolist() for w in model.weights]
    json.dump({"losses": losses, "weights": weights, "step_s": step_time(times)},
              open(out, "w"))


def run_kill_role(out, workers):
    """Trains until killed or failed; writes how it ended."""
    import tensorflow as tf
    keras = tf.keras
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    check_devices(tf, strategy, workers)
    with strategy.scope():
        model = build_model(keras)
        optimizer = keras.optimizers.SGD(0.01)

    @tf.function
    def train_step(bx, by):
        def step_fn(bx, by):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                    by, model(bx), from_logits=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return strategy.run(step_fn, args=(bx, by))

    x, y = data()
    bx, by = tf.constant(x[:8]), tf.constant(y[:8])
    step = 0
    try:
        while True:
            train_step(bx, by)
            step += 1
            with open(out + ".steps", "w") as f:
                f.write(str(step))
    except Exception as err:  # noqa: BLE001 - the error is the result
        json.dump({"steps": step, "error": type(err).__name__, "message": str(err)[:2000],
                   "at": time.time()}, open(out, "w"))
        sys.exit(3)


def mirrored():
    """One process, two sims: `MirroredStrategy()` with no device list picks
    both, and Keras `fit` equals one device."""
    env = dict(os.environ, TENSORPLUG_AS_GPU="1", TENSORPLUG_DEVICE="sim,sim",
               TENSORPLUG_FALLBACK="error")
    env.pop("TF_CONFIG", None)
    done = subprocess.run([sys.executable, __file__, "role", "mirrored", "-", "2"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    print(done.stdout.strip().splitlines()[-1])


def run_mirrored(_out, replicas):
    import numpy as np
    import tensorflow as tf
    keras = tf.keras
    strategy = tf.distribute.MirroredStrategy()
    devices = strategy.extended.worker_devices
    assert devices == tuple(f"/job:localhost/replica:0/task:0/device:GPU:{i}"
                            for i in range(replicas)), devices
    x, y = data()
    losses = {}
    for name, scope in (("two", strategy.scope()), ("one", tf.device("/GPU:0"))):
        with scope:
            model = build_model(keras)
            # The wheel's Keras hook turns "auto" XLA off; this test loads the bare .so.
            model.compile(optimizer=keras.optimizers.SGD(0.05),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          jit_compile=False)
        history = model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0)
        losses[name] = history.history["loss"]
    assert np.allclose(losses["two"], losses["one"], rtol=1e-5), losses
    print(f"mirrored: OK, MirroredStrategy() picked {devices}; fit loss {losses['two']} "
          f"(one device {losses['one']})")


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def role_env(index, ports):
    env = dict(os.environ)
    env["TF_CONFIG"] = json.dumps({
        "cluster": {"worker": [f"localhost:{p}" for p in ports]},
        "task": {"type": "worker", "index": index},
    })
    env["TENSORPLUG_AS_GPU"] = "1"
    env["TENSORPLUG_DEVICE"] = "sim"
    # A float op that falls back to the CPU fails the step, not the test's eye.
    env["TENSORPLUG_FALLBACK"] = "error"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    # A worker that crashes prints its Python threads' stacks to its log.
    env["PYTHONFAULTHANDLER"] = "1"
    return env


def start_workers(kind, tmp, n=2):
    ports = free_ports(n)
    procs, outs = [], []
    for index in range(n):
        out = os.path.join(tmp, f"{kind}-{index}.json")
        log = open(os.path.join(tmp, f"{kind}-{index}.log"), "w")
        procs.append(subprocess.Popen(
            [sys.executable, __file__, "role", kind, out, str(n)],
            env=role_env(index, ports), stdout=log, stderr=subprocess.STDOUT))
        outs.append(out)
    return procs, outs


def tail(tmp, kind, index):
    with open(os.path.join(tmp, f"{kind}-{index}.log")) as f:
        return "".join(f.readlines()[-30:])


def close(a, b, what, rtol=1e-5, atol=1e-6):
    import numpy as np
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = np.max(np.abs(a - b) / (atol + rtol * np.abs(b))) if a.size else 0.0
    assert err <= 1.0, f"{what}: off by {err:.3g} of the tolerance\n{a}\n{b}"
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def compare(kind, tmp):
    procs, outs = start_workers(kind, tmp)
    start = time.time()
    codes = [proc.wait(timeout=600) for proc in procs]
    # One worker's crash fails the other's collectives: show every log.
    assert codes == [0] * len(procs), "workers failed (exit codes {}):\n{}".format(
        codes, "\n".join(f"--- worker {i}:\n{tail(tmp, kind, i)}" for i in range(len(procs))))
    two = time.time() - start
    results = [json.load(open(o)) for o in outs]
    single_out = os.path.join(tmp, f"{kind}-single.json")
    env = dict(os.environ, TENSORPLUG_AS_GPU="1", TENSORPLUG_DEVICE="sim",
               TENSORPLUG_FALLBACK="error")
    env.pop("TF_CONFIG", None)
    subprocess.run([sys.executable, __file__, "single", kind, single_out], env=env, check=True)
    single = json.load(open(single_out))
    for index, r in enumerate(results):
        assert r["local"] == [f"/job:worker/replica:0/task:{index}/device:GPU:0"], r["local"]
        assert "FPGA" in json.dumps(r["details"]) or r["details"] == {}, r["details"]
        assert len(r["losses"]) == STEPS, r["losses"]
    if kind == "loop":
        # The all-reduce's merges ran on the device: TF's ring reducer runs
        # an `Add` kernel on the gradients' device, here ours.
        assert results[0]["var_device"].endswith("/device:GPU:0"), results[0]["var_device"]
        merges = {op: n for op, n in results[0]["device_ops"].items() if op.endswith(":Add")}
        assert merges, f"no Add on the device plane: {results[0]['device_ops']}"
        print(f"loop: merges on the device in the profiled step: {merges}")
    # Both workers hold the same weights, and they equal the one-worker run.
    worst = 0.0
    import numpy as np
    for a, b in zip(results[0]["weights"], results[1]["weights"]):
        assert np.array_equal(a, b), f"{kind}: worker 0 and worker 1 hold different weights"

    for a, b in zip(results[0]["weights"], single["weights"]):
        worst = max(worst, close(a, b, f"{kind}: two workers vs one"))
    expected = single["losses"]
    if kind == "fit":
        # tf_keras logs the sum of the workers' mean losses under this
        # strategy: on the CPU with no plugin too (4.7865 at step 1 here).
        expected = [2 * loss for loss in expected]
    close(results[0]["losses"], expected, f"{kind}: losses, two workers vs one")
    print(f"{kind}: OK, {STEPS} steps, losses {results[0]['losses']} "
          f"(one worker {single['losses']}), weights within {worst:.2e}, "
          f"two workers took {two:.1f} s")
    if kind == "loop" and single["step_s"] and results[0]["step_s"]:
        print(f"loop: median step (global batch {GLOBAL_BATCH}): one worker "
              f"{single['step_s'] * 1e3:.1f} ms, two workers {results[0]['step_s'] * 1e3:.1f} ms")


def cause(message):
    """The line of TF's error that names the cause (its first is generic)."""
    lines = [l.strip() for l in message.splitlines() if l.strip()]
    for key in ("UNAVAILABLE", "Unavailable", "unavailable", "Socket closed", "Connection"):
        for line in lines:
            if key in line:
                return line[:300]
    return lines[-1][:300] if lines else ""


def kill(tmp):
    procs, outs = start_workers("kill", tmp)
    steps_file = outs[1] + ".steps"
    deadline = time.time() + 300
    while not (os.path.exists(steps_file) and int(open(steps_file).read() or 0) >= 3):
        assert time.time() < deadline, "workers never trained:\n" + tail(tmp, "kill", 0)
        for index, proc in enumerate(procs):
            assert proc.poll() is None, f"worker {index} exited:\n{tail(tmp, 'kill', index)}"
        time.sleep(0.2)
    killed_at = time.time()
    procs[1].send_signal(signal.SIGKILL)
    procs[1].wait()
    try:
        rc = procs[0].wait(timeout=KILL_BOUND_S + 30)
    except subprocess.TimeoutExpired:
        procs[0].kill()
        raise AssertionError(f"worker 0 still running {KILL_BOUND_S + 30} s after its peer died")
    result = json.load(open(outs[0]))
    took = result["at"] - killed_at
    assert rc == 3, rc
    assert took <= KILL_BOUND_S, f"worker 0 failed only after {took:.1f} s"
    print(f"kill: OK, worker 1 killed after {result['steps']} steps of worker 0; worker 0 "
          f"failed {took:.1f} s later with {result['error']}: {cause(result['message'])}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "role":
        kind, out, workers = sys.argv[2], sys.argv[3], int(sys.argv[4])
        {"loop": run_loop, "fit": run_fit, "kill": run_kill_role,
         "mirrored": run_mirrored}[kind](out, workers)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "single":
        run_single(sys.argv[2], sys.argv[3])
        return
    parts = sys.argv[1:] or ["loop", "fit", "kill", "mirrored"]
    with tempfile.TemporaryDirectory() as tmp:
        for part in parts:
            if part == "kill":
                kill(tmp)
            elif part == "mirrored":
                mirrored()
            else:
                compare(part, tmp)


if __name__ == "__main__":
    main()
