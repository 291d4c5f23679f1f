"""TF's tools with the plugin loaded: TFLite conversion (Keras model, SavedModel,
full-integer quantization), SavedModel export/load, the .keras format,
checkpoints, tf.data + fit, TensorBoard summaries and profiling, the
memory-info API, and TF1-style graphs (a Session, a V1 SavedModel and what
reads it: tf.saved_model.load, the TFLite converter, MLIR's V1 importer). No device scope anywhere: with the plugin, TF places the
models' variables on FPGA:0 by itself.

Each case runs twice: first as `reference` (TENSORPLUG_DEVICE=bogus: the
plugin declines, TF runs on the CPU), then as `plugin` (FPGA:0 registered),
which compares its results with the reference's. One process runs one role
of one case, or of several in order (`--case a,b`: a TF import costs 3 to
4.5 s of CPU); a case that raises reports `FAILED` and the next one runs.

Usage:
  tf_tools.py --case NAME[,NAME…] --role reference|plugin --out DIR
                                       one role of the cases, in one process
  tf_tools.py [--out DIR] [NAME ...]   both runs of every (or each named) case,
                                       each in a child process, and a summary
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

CASES = ["tflite_keras", "tflite_saved_model", "tflite_int8", "saved_model",
         "keras_format", "checkpoint", "data_fit", "tensorboard", "memory_info", "tf1_graph"]


def parent(args):
    """Runs every case as two child processes; a crash fails only its case."""
    if not os.environ.get("TF_PLUGGABLE_DEVICE_LIBRARY_PATH"):
        sys.exit("set TF_PLUGGABLE_DEVICE_LIBRARY_PATH to libtensorplug_fpga.so")
    scratch = None if args.out else tempfile.TemporaryDirectory(prefix="tensorplug-tf-tools-")
    out = args.out or scratch.name
    failed = []
    for case in args.cases or CASES:
        for role, device in (("reference", "bogus"), ("plugin", None)):
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
            env.pop("TENSORPLUG_DEVICE", None)
            if device:
                env["TENSORPLUG_DEVICE"] = device
            start = time.monotonic()
            run = subprocess.run([sys.executable, __file__, "--case", case, "--role", role,
                                  "--out", out], env=env, capture_output=True, text=True)
            took = time.monotonic() - start
            print(run.stdout, end="")
            if run.returncode != 0:
                why = (f"killed by signal {-run.returncode}" if run.returncode < 0
                       else f"exit {run.returncode}")
                print(f"{case} [{role}]: FAILED ({why}, {took:.1f}s); stderr tail:\n"
                      f"{run.stderr[-3000:]}")
                failed.append(f"{case} [{role}]: {why}")
                break
            print(f"  ({case} [{role}] took {took:.1f}s)")
    print("failed: " + "; ".join(failed) if failed else "all cases passed")
    return 1 if failed else 0


cli = argparse.ArgumentParser()
cli.add_argument("--case", help="a case, or several joined by commas")
cli.add_argument("--role", choices=["reference", "plugin"])
cli.add_argument("--out")
cli.add_argument("cases", nargs="*", help=f"any of {', '.join(CASES)}")
ARGS = cli.parse_args()
if set(ARGS.cases) - set(CASES):
    cli.error(f"unknown cases {set(ARGS.cases) - set(CASES)}")
if ARGS.case is None:
    sys.exit(parent(ARGS))
if set(ARGS.case.split(",")) - set(CASES):
    cli.error(f"unknown cases in --case {ARGS.case}")
if not (ARGS.role and ARGS.out):
    cli.error("--case needs --role and --out")

import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

from tf_kernels_common import tf_variable  # noqa: E402

KERAS_2 = keras.__version__.startswith("2.")
ROLE, PLUGIN = ARGS.role, ARGS.role == "plugin"
CASE, WORK = None, None  # the running case and its directory (`run`)
HOME = "FPGA:0" if PLUGIN else "CPU:0"  # where default placement puts variables
fpgas = tf.config.list_logical_devices("FPGA")
assert [d.name for d in fpgas] == (["/device:FPGA:0"] if PLUGIN else []), fpgas
x8 = np.random.default_rng(1).standard_normal((32, 8)).astype(np.float32)
y8 = np.random.default_rng(2).integers(0, 3, 32)
images = np.random.default_rng(3).standard_normal((16, 8, 8, 1)).astype(np.float32)


def report(text):
    print(f"{CASE} [{ROLE}]: {text}", flush=True)


def seeded(model, seed=5):
    """Weights from a seeded numpy generator: the same in both runs."""
    rng = np.random.default_rng(seed)
    model.set_weights([(0.3 * rng.standard_normal(w.shape)).astype(np.float32)
                       for w in model.get_weights()])
    return no_xla(model)


def no_xla(model):
    """Keras 3's jit_compile="auto" picks XLA, which has no FPGA backend (without
    the wheel's hook, docs/wheel.md, jit_compile=False is the user's job)."""
    model.jit_compile = False
    return model


def mlp():
    return seeded(keras.Sequential([keras.Input((8,), name="x"),
                                    keras.layers.Dense(16, activation="relu"),
                                    keras.layers.Dense(3)]))


def convnet():
    return seeded(keras.Sequential([
        keras.Input((8, 8, 1), name="image"),
        keras.layers.Conv2D(4, 3, padding="same"), keras.layers.ReLU(),
        keras.layers.MaxPooling2D(2), keras.layers.Flatten(), keras.layers.Dense(3)]))


def check_home(what, variables):
    devices = {tf_variable(v).device for v in variables}
    assert variables and all(d.endswith(HOME) for d in devices), f"{what}: {devices}"


def export(model, path):
    if KERAS_2:
        tf.saved_model.save(model, path)
    else:
        model.export(path)  # Keras 3: a TF SavedModel with a serving signature


def interpret(flatbuffer, x):
    """Runs a .tflite flatbuffer on `x`, quantizing int8 input if needed."""
    interpreter = tf.lite.Interpreter(model_content=flatbuffer)
    interpreter.allocate_tensors()
    inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    if inp["dtype"] == np.int8:
        scale, zero = inp["quantization"]
        x = np.clip(np.round(x / scale + zero), -128, 127).astype(np.int8)
    interpreter.resize_tensor_input(inp["index"], x.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(inp["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(out["index"])


def rel_diff(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / max(np.abs(b).max(), 1e-30))


def tflite_result(converter, x, model):
    flatbuffer = converter.convert()
    y = interpret(flatbuffer, x)
    if y.dtype == np.float32:  # float conversions keep the Keras model's math
        assert rel_diff(y, model(x).numpy()) <= 1e-5, (y, model(x).numpy())
    report(f"converted to {len(flatbuffer)} bytes; interpreter output {y.dtype} {y.shape}")
    return {"y": y, "flatbuffer": np.frombuffer(flatbuffer, np.uint8)}


def case_tflite_keras():
    model = mlp()
    check_home("Keras model variables", model.variables)
    return tflite_result(tf.lite.TFLiteConverter.from_keras_model(model), x8, model)


def case_tflite_saved_model():
    model = mlp()
    check_home("Keras model variables", model.variables)
    export(model, os.path.join(WORK, "saved"))
    converter = tf.lite.TFLiteConverter.from_saved_model(os.path.join(WORK, "saved"))
    return tflite_result(converter, x8, model)


def case_tflite_int8():
    model = convnet()
    check_home("convnet variables", model.variables)

    def representative():
        for sample in np.random.default_rng(4).standard_normal((32, 1, 8, 8, 1)):
            yield [sample.astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = converter.inference_output_type = tf.int8
    result = tflite_result(converter, images, model)
    assert result["y"].dtype == np.int8, result["y"].dtype
    return result


def compare_tflite(ours, ref):
    assert np.array_equal(ours["y"], ref["y"]), \
        f"interpreter output differs from the reference's:\n{ours['y']}\n{ref['y']}"
    same = np.array_equal(ours["flatbuffer"], ref["flatbuffer"])
    report(f"interpreter output bit-equal to the reference's; flatbuffer "
           f"{'byte-identical' if same else 'NOT byte-identical'} to the reference's "
           f"({ours['flatbuffer'].size} vs {ref['flatbuffer'].size} bytes)")


def case_saved_model():
    model = mlp()
    check_home("Keras model variables", model.variables)
    export(model, os.path.join(WORK, "saved"))
    loaded = tf.saved_model.load(os.path.join(WORK, "saved"))
    check_home("loaded SavedModel variables", list(loaded.variables))
    serve = loaded.signatures["serving_default"]
    (name,) = serve.structured_input_signature[1]
    (y,) = serve(**{name: tf.constant(x8)}).values()
    predicted = model.predict(x8, verbose=0)
    assert rel_diff(y, predicted) <= 1e-6, (y.numpy(), predicted)
    report(f"serving_default({name}) equals model.predict within 1e-6 relative")
    return {"y": y.numpy()}


def case_keras_format():
    model = mlp()
    path = os.path.join(WORK, "model.keras")
    model.save(path)
    loaded = no_xla(keras.models.load_model(path))
    check_home("loaded .keras model variables", loaded.variables)
    y, want = loaded.predict(x8, verbose=0), model.predict(x8, verbose=0)
    assert np.array_equal(y, want), (y, want)
    report("load_model(.keras) predicts the same as the saved model")
    return {"y": y}


def case_checkpoint():
    model = mlp()
    check_home("Keras model variables", model.variables)
    checkpoint = tf.train.Checkpoint(model=model)
    saved = model.get_weights()
    path = checkpoint.save(os.path.join(WORK, "single", "ckpt"))
    model.set_weights([np.zeros_like(w) for w in saved])
    checkpoint.restore(path).assert_existing_objects_matched()
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), saved))
    manager = tf.train.CheckpointManager(checkpoint, os.path.join(WORK, "managed"), max_to_keep=2)
    generations = []
    for seed in (11, 12, 13):
        generations.append(seeded(model, seed).get_weights())
        manager.save()
    assert len(manager.checkpoints) == 2, manager.checkpoints
    model.set_weights([np.zeros_like(w) for w in saved])
    checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), generations[2]))
    checkpoint.restore(manager.checkpoints[0]).assert_existing_objects_matched()
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), generations[1]))
    check_home("restored variables", model.variables)
    report(f"save/restore and CheckpointManager (kept {len(manager.checkpoints)} of 3): "
           f"restored values equal the saved ones, variables on {HOME}")
    return {"restored": np.concatenate([w.ravel() for w in model.get_weights()])}


def compile_sgd(model):
    model.compile(optimizer=keras.optimizers.SGD(0.05), jit_compile=False,  # no XLA for FPGA
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def case_data_fit():
    keras.utils.set_random_seed(7)
    model = compile_sgd(mlp())
    data = (tf.data.Dataset.from_tensor_slices((x8, y8)).shuffle(32, seed=3)
            .batch(8).prefetch(tf.data.AUTOTUNE))
    loss = np.array(model.fit(data, epochs=2, verbose=0).history["loss"])
    check_home("trained variables", model.variables)
    report(f"fit on shuffled, batched, prefetched tf.data: loss {loss}")
    return {"loss": loss, "weights": np.concatenate([w.ravel() for w in model.get_weights()])}


def compare_close(ours, ref, tolerance, relative=False):
    """Every result within `tolerance` (absolute, or relative to the reference's largest)."""
    for key in ours:
        diff = rel_diff(ours[key], ref[key]) if relative else float(np.abs(ours[key] - ref[key]).max())
        assert diff <= tolerance, f"{key}: max |plugin - reference| = {diff}"
    exact = all(np.array_equal(ours[key], ref[key]) for key in ours)
    report(f"{', '.join(ours)} equal to the reference's within {tolerance}"
           f"{' relative' if relative else ''} ({'bit-equal' if exact else 'not bit-equal'})")


def events(pattern):
    """{tag: [values]} and the number of GraphDef events in matching event files."""
    tags, graphs = {}, 0
    for path in glob.glob(pattern, recursive=True):
        for event in tf.compat.v1.train.summary_iterator(path):
            graphs += bool(event.graph_def)
            for value in event.summary.value:
                number = tf.make_ndarray(value.tensor) if value.HasField("tensor") else value.simple_value
                tags.setdefault(value.tag, []).append(number)
    return tags, graphs


def case_tensorboard():
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
    try:
        import tensorboard  # noqa: F401  tf.summary.scalar and Keras' callback need it
    except ImportError:
        tensorboard = None
        report(f"NOT TESTED: tf.summary.scalar and the Keras TensorBoard callback: the "
               f"tensorboard package is not installed (tensorflow-cpu {tf.__version__} does not "
               f"depend on it); tested instead: tf.summary.write and tf.profiler around fit")
    logdir = os.path.join(WORK, "logs")
    writer = tf.summary.create_file_writer(os.path.join(logdir, "manual"))
    scalar = tf.summary.scalar if tensorboard else tf.summary.write
    with writer.as_default():
        for step in range(3):
            scalar("tools/value", 0.5 * step, step=step)

    @tf.function
    def square_relu(a):
        return tf.nn.relu(tf.matmul(a, a))

    tf.summary.trace_on(graph=True)
    square_relu(tf.ones([4, 4]))
    with writer.as_default():
        tf.summary.trace_export("tools_trace", step=0)
    writer.close()
    tags, _ = events(os.path.join(logdir, "manual", "events.out.tfevents.*"))
    assert {"tools/value", "tools_trace"} <= set(tags), sorted(tags)

    keras.utils.set_random_seed(7)
    model = compile_sgd(mlp())
    fit = dict(x=x8, y=y8, batch_size=4, epochs=2, verbose=0, shuffle=False)
    if tensorboard:
        board = keras.callbacks.TensorBoard(os.path.join(logdir, "fit"), profile_batch=(2, 3))
        history = model.fit(**fit, callbacks=[board]).history
        fit_tags, graphs = events(os.path.join(logdir, "fit", "train", "events.out.tfevents.*"))
        # Keras 2 writes the model's GraphDef; Keras 3 its config ("keras").
        drawn = graphs if KERAS_2 else "keras" in fit_tags
        assert "epoch_loss" in fit_tags and drawn, (sorted(fit_tags), graphs)
    else:
        tf.profiler.experimental.start(os.path.join(logdir, "fit"))
        history = model.fit(**fit).history
        tf.profiler.experimental.stop()
        fit_tags, graphs = {}, 0
    profiles = glob.glob(os.path.join(logdir, "fit", "**", "*.xplane.pb"), recursive=True)
    planes = []
    for path in profiles:
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
        planes += [p.name for p in space.planes if any(line.events for line in p.lines)]
    fpga_plane = "/device:GPU:1000" in planes  # our FPGA:0 plane (docs/xspace-layout.md)
    if PLUGIN:
        assert profiles and fpga_plane, f"profiles {profiles}, planes with events {planes}"
    report(f"event files: scalars {sorted(tags)}, fit {sorted(fit_tags)}, {graphs} graph(s); "
           f"{len(profiles)} .xplane.pb, FPGA plane with events: {fpga_plane}")
    return {"values": np.array(tags["tools/value"], np.float32),
            "loss": np.array(history["loss"], np.float32)}


def case_memory_info():
    if not PLUGIN:
        report("skipped: no FPGA device without the plugin")
        return {}
    before = tf.config.experimental.get_memory_info("FPGA:0")
    held = tf.Variable(tf.zeros([1 << 18]))  # 1 MiB, no device scope
    check_home("new variable", [held])
    info = tf.config.experimental.get_memory_info("FPGA:0")
    assert set(info) == {"current", "peak"} and all(type(v) is int for v in info.values()), info
    assert info["current"] > 0 and info["peak"] >= info["current"], info
    spike = tf.Variable(tf.zeros([1 << 20]))  # 4 MiB, freed again
    del spike
    spiked = tf.config.experimental.get_memory_info("FPGA:0")
    assert spiked["peak"] >= info["current"] + (4 << 20) > spiked["current"], spiked
    tf.config.experimental.reset_memory_stats("FPGA:0")
    reset = tf.config.experimental.get_memory_info("FPGA:0")
    assert reset["peak"] == reset["current"], reset
    report(f"memory info: before {before}, holding 1 MiB {info}, after a freed 4 MiB "
           f"{spiked}, after reset_memory_stats {reset}")
    return {}


def case_tf1_graph():
    """A TF1 Session creates its variable in the graph: the plugin keeps it on
    the host (TF's C++ tools read a session's variables as host memory), the
    math stays on FPGA:0 (docs/graph-optimizer.md)."""
    path = os.path.join(WORK, "v1")
    weights = (0.3 * np.random.default_rng(6).standard_normal((8, 3))).astype(np.float32)
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        x = tf.compat.v1.placeholder(tf.float32, [None, 8], name="x")
        w = tf.compat.v1.get_variable("w", initializer=weights, use_resource=True)
        y = tf.nn.relu(tf.matmul(x, w), name="y")
        session.run(tf.compat.v1.global_variables_initializer())
        meta = tf.compat.v1.RunMetadata()
        options = tf.compat.v1.RunOptions(output_partition_graphs=True)
        session_y = session.run(y, {x: x8}, options=options, run_metadata=meta)
        placed = {n.name: n.device for g in meta.partition_graphs for n in g.node}
        want = {"w": "CPU:0", "y": HOME, "MatMul": HOME}
        assert all(placed[n].endswith(d) for n, d in want.items()), placed
        tf.compat.v1.saved_model.simple_save(session, path, {"x": x}, {"y": y})
    loaded = tf.saved_model.load(path)  # TF2 loads a V1 SavedModel eagerly
    check_home("V1 SavedModel variables, loaded in TF2", list(loaded.variables))
    served = loaded.signatures["serving_default"](x=tf.constant(x8))["y"].numpy()
    assert np.array_equal(served, session_y), (served, session_y)
    lite = interpret(tf.lite.TFLiteConverter.from_saved_model(path).convert(), x8)
    assert rel_diff(lite, session_y) <= 1e-5, (lite, session_y)
    mlir = tf.mlir.experimental.convert_saved_model_v1(path, "", "serve", True, True)
    assert '"tf_saved_model.global_tensor"' in mlir and 'sym_name = "w"' in mlir, mlir[:2000]
    report(f"session: variable w on {placed['w'].rpartition('/')[2]}, MatMul on "
           f"{placed['MatMul'].rpartition('/')[2]}; tf.saved_model.load serves it, the TFLite "
           f"converter and convert_saved_model_v1 read it")
    return {"y": session_y, "served": served, "lite": lite,
            "mlir": np.frombuffer(mlir.encode(), np.uint8)}


def compare_tf1_graph(ours, ref):
    assert np.array_equal(ours["mlir"], ref["mlir"]), "the MLIR import differs from the reference's"
    compare_close({k: ours[k] for k in ("y", "served", "lite")}, ref, 1e-6, relative=True)
    report("convert_saved_model_v1's module is identical to the reference's")


COMPARE = {"tflite_keras": compare_tflite, "tflite_saved_model": compare_tflite,
           "tflite_int8": compare_tflite,
           "saved_model": lambda ours, ref: compare_close(ours, ref, 1e-6, relative=True),
           "keras_format": lambda ours, ref: compare_close(ours, ref, 1e-6, relative=True),
           "checkpoint": lambda ours, ref: compare_close(ours, ref, 0),
           "data_fit": lambda ours, ref: compare_close(ours, ref, 1e-5),
           "tensorboard": lambda ours, ref: compare_close(ours, ref, 1e-5),
           "memory_info": lambda ours, ref: None, "tf1_graph": compare_tf1_graph}

def run(case):
    """One case in this role: its results saved (reference) or compared."""
    global CASE, WORK
    CASE, WORK = case, os.path.join(ARGS.out, ROLE, case)
    os.makedirs(WORK, exist_ok=True)
    results = globals()[f"case_{CASE}"]()
    if PLUGIN:
        reference = os.path.join(ARGS.out, "reference", f"{CASE}.npz")
        assert os.path.exists(reference), f"no reference results at {reference}: run --role reference first"
        with np.load(reference) as ref:
            COMPARE[CASE](results, dict(ref))
    else:
        np.savez(os.path.join(ARGS.out, "reference", f"{CASE}.npz"), **results)
    report("PASS")


failures = 0
for name in ARGS.case.split(","):
    try:
        run(name)
    except Exception:  # noqa: BLE001 - reported, and the next case runs
        failures += 1
        report("FAILED\n" + traceback.format_exc())
sys.exit(1 if failures else 0)
