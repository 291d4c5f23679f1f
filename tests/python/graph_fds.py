"""Writes (or checks) host-bridge/proto/tf_graph.fds.bin: the exact
FileDescriptorSet of TF's GraphDef closure (plus KernelList), taken from the
pinned tensorflow wheel's generated *_pb2 modules.

    python graph_fds.py          # regenerate
    python graph_fds.py --check  # exit 1 if the checked-in file is stale
"""

import pathlib
import sys

from google.protobuf import descriptor_pb2
from tensorflow.core.framework import graph_pb2, kernel_def_pb2

OUT = pathlib.Path(__file__).resolve().parents[2] / "host-bridge/proto/tf_graph.fds.bin"


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


def main():
    data, names = build()
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
