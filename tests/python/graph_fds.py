"""Writes (or checks) host-bridge/proto/tf_graph.fds.bin: the exact
FileDescriptorSet of TF's GraphDef closure (plus KernelList), taken from the
pinned tensorflow wheel's generated *_pb2 modules.

    python graph_fds.py          # regenerate (then `cargo xtask protos`)
    python graph_fds.py --check  # exit 1 if the checked-in file is stale

On another TF than the pinned one, --check instead checks that the two are
wire-compatible: every field of every message both sets have has the same
number, type and label (fields only one side has decode as unknown or
unset), so the prost types decode and encode that TF's graphs.
"""

import pathlib
import sys

from google.protobuf import descriptor_pb2
import tensorflow as tf
from tensorflow.core.framework import graph_pb2, kernel_def_pb2

OUT = pathlib.Path(__file__).resolve().parents[2] / "host-bridge/proto/tf_graph.fds.bin"
PINNED = "2.21.0"  # xtask/requirements.txt


def closure(roots):
    """Files in dependency order (each after the files it imports)."""
    ordered, seen = [], set()

    def visit(fd):
        if fd.name in seen:
            return
        seen.add(fd.name)
        for dep in fd.dependencies:
            visit(dep)
        ordered.append(fd)

    for root in roots:
        visit(root)
    return ordered


def build():
    fds = descriptor_pb2.FileDescriptorSet()
    for fd in closure([graph_pb2.DESCRIPTOR, kernel_def_pb2.DESCRIPTOR]):
        fds.file.add().ParseFromString(fd.serialized_pb)
    return fds.SerializeToString(deterministic=True), [f.name for f in fds.file]


def messages(fds):
    """`{full message name: {field number: (name, type, label)}}`."""
    out = {}

    def walk(prefix, message):
        name = f"{prefix}.{message.name}"
        out[name] = {f.number: (f.name, f.type, f.label) for f in message.field}
        for nested in message.nested_type:
            walk(name, nested)

    for file in fds.file:
        for message in file.message_type:
            walk(file.package, message)
    return out


def compatible(data):
    pinned, ours = descriptor_pb2.FileDescriptorSet(), descriptor_pb2.FileDescriptorSet()
    pinned.ParseFromString(OUT.read_bytes())
    ours.ParseFromString(data)
    old, new = messages(pinned), messages(ours)
    bad, shared, only = [], 0, []
    for name, fields in old.items():
        for number, field in fields.items():
            theirs = new.get(name, {}).get(number)
            if theirs is None:
                only.append(f"{name}.{field[0]}")
            elif theirs != field:
                bad.append(f"{name} field {number}: pinned {field}, TF {tf.__version__} {theirs}")
            else:
                shared += 1
    if bad:
        print("INCOMPATIBLE " + "; ".join(bad))
        sys.exit(1)
    print(f"COMPATIBLE with the pinned {PINNED} descriptors: {shared} fields agree; "
          f"only in the pinned set: {only or 'none'}")


def main():
    data, names = build()
    if "--check" in sys.argv and tf.__version__ != PINNED:
        compatible(data)
        return
    if "--check" in sys.argv:
        current = OUT.read_bytes() if OUT.exists() else b""
        if current != data:
            print(f"STALE {OUT}: regenerate with `python tests/python/graph_fds.py`")
            sys.exit(1)
        print(f"UP-TO-DATE {len(names)} files, {len(data)} bytes")
        return
    OUT.write_bytes(data)
    print(f"WROTE {OUT}: {len(names)} files, {len(data)} bytes")
    for name in names:
        print(" ", name)


if __name__ == "__main__":
    main()
