"""Whole int8 models on the FPGA with the wheel's `<lib>_int8` module
(xtask/python/int8.py), against TFLite's interpreter on the same int8 model.

usage: int8_model_vs_tflite.py [convnet|convnet-float|softmax|mobilenet|bad] [images]

(`convnet-float`: the model keeps float input and output, so the graph
starts with the plugin's Quantize and ends with its Dequantize, as a
Keras `predict` would see it.)

Converts the model with TFLite's converter (full int8, a seeded
representative dataset), runs a fixed set of seeded int8 inputs through
tf.lite.Interpreter (reference kernels) and through `Int8Model` on
/device:FPGA:0, and prints

  model <name> images=<n> top1_agree=<k> max_diff_quanta=<d> differ=<outputs that differ>
  float_ops <the ops run in float between Dequantize and Quantize, or ->
"""
import importlib.util
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tflite_int8_dump import convert, convnet, invoke  # noqa: E402

DEVICE_TYPE = os.environ.get("TENSORPLUG_DEVICE_TYPE", "FPGA")


def int8_module():
    """The wheel's module, as `cargo xtask dist` writes it."""
    path = os.path.join(HERE, "..", "..", "xtask", "python", "int8.py")
    source = open(path).read().replace("{device_type}", DEVICE_TYPE).replace("{lib}", "tensorplug_fpga")
    spec = importlib.util.spec_from_loader("tensorplug_fpga_int8", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def mobilenet():
    model = tf.keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None,
                                              classes=100, classifier_activation=None)
    return model, (96, 96, 3)


def corrupted(flatbuffer, what):
    """The int8 model with the first CONV_2D's output scale set to 0, or its
    output zero point to 300, or a filter with one scale too many."""
    from tensorflow.lite.python import schema_py_generated as schema
    import flatbuffers
    fb = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(flatbuffer, 0))
    graph = fb.subgraphs[0]
    conv = next(op for op in graph.operators
                if fb.operatorCodes[op.opcodeIndex].builtinCode == schema.BuiltinOperator.CONV_2D)
    out, filt = graph.tensors[conv.outputs[0]], graph.tensors[conv.inputs[1]]
    if what == "scale":
        out.quantization.scale = [0.0]
    elif what == "zero_point":
        out.quantization.zeroPoint = [300]
    else:
        filt.quantization.scale = list(filt.quantization.scale) + [0.5]
        filt.quantization.zeroPoint = list(filt.quantization.zeroPoint) + [0]
    builder = flatbuffers.Builder(1024)
    builder.Finish(fb.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def bad():
    """Each corruption must be a ValueError naming the op and tensor."""
    tf.keras.utils.set_random_seed(7)
    model, shape = convnet()
    flatbuffer = convert(model, shape)
    for what in ("scale", "zero_point", "channels"):
        try:
            int8_module().Int8Model(corrupted(flatbuffer, what))
            print(f"bad {what}: accepted")
        except ValueError as error:
            print(f"bad {what}: ValueError: {error}")


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "convnet"
    if name == "bad":
        return bad()
    images = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    tf.keras.utils.set_random_seed(7)
    if name == "mobilenet":
        model, shape = mobilenet()
    elif name == "softmax":
        model, shape = classifier()
    else:
        model, shape = convnet()
    compare(name, convert(model, shape, int8_io=name != "convnet-float"), shape, images)


def classifier():
    """The convnet with a 5-way softmax on top: SOFTMAX on the device."""
    model, shape = convnet()
    return tf.keras.Model(model.inputs, tf.keras.layers.Softmax()(model.outputs[0])), shape


def compare(name, flatbuffer, shape, images):
    """The int8 model on the FPGA against TFLite on `images` seeded inputs."""
    interpreter, _, x = invoke(flatbuffer, shape, 5, batch=images, preserve=False)
    want = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    fpga = int8_module().Int8Model(flatbuffer)
    got = np.concatenate([fpga(tf.constant(x[i:i + 8])).numpy() for i in range(0, images, 8)])
    if want.dtype == np.float32:
        # In quanta of the output's scale (exact equality: 0).
        scale = interpreter.get_output_details()[0]["quantization_parameters"]["scales"]
        scale = scale[0] if len(scale) else fpga_output_scale(fpga)
        diff = np.round(np.abs(got.astype(np.float64) - want.astype(np.float64)) / scale).astype(np.int64)
        diff[got != want] = np.maximum(diff[got != want], 1)
    else:
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
    agree = int(np.sum(np.argmax(got, -1) == np.argmax(want, -1)))
    print(f"model {name} images={images} top1_agree={agree} max_diff_quanta={int(diff.max())} "
          f"differ={int(np.count_nonzero(diff))} of {diff.size}")
    print(f"float_ops {' '.join(fpga.float_ops) or '-'}")
    print(f"int8_nodes {int8_nodes(fpga)}")


def fpga_output_scale(fpga):
    """The scale of the int8 tensor the model's final DEQUANTIZE reads."""
    op = [o for o in fpga._ops if o["op_name"] == "DEQUANTIZE"][-1]
    return float(fpga._details[op["inputs"][0]]["quantization_parameters"]["scales"][0])


def int8_nodes(fpga):
    """How many of the plugin's int8 ops the model's graph has; each has a
    kernel for the device only, so each ran there (checked)."""
    from tensorflow.python.framework import kernels
    graph = fpga._call.get_concrete_function().graph.as_graph_def()
    ops = [n.op for n in graph.node if n.op.startswith(f"_Tensorplug{DEVICE_TYPE}")]
    for op in set(ops):
        devices = {k.device_type for k in kernels.get_registered_kernels_for_op(op).kernel}
        if devices != {DEVICE_TYPE}:
            sys.exit(f"{op} has kernels for {sorted(devices)}")
    return len(ops)


if __name__ == "__main__":
    main()
