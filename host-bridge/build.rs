//! Generates the prost types of TensorFlow's `GraphDef` closure from the
//! checked-in `proto/tf_graph.fds.bin`: the exact descriptors of the pinned
//! `tensorflow-cpu` wheel (regenerate with `tests/python/graph_fds.py`; see
//! `docs/graph-optimizer.md`). No `protoc` is needed.

use prost::Message;

const DESCRIPTORS: &str = "proto/tf_graph.fds.bin";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo::rerun-if-changed={DESCRIPTORS}");
    println!("cargo::rerun-if-changed=build.rs");
    let bytes = std::fs::read(DESCRIPTORS)?;
    let descriptors = prost_types::FileDescriptorSet::decode(bytes.as_slice())?;
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    prost_build::Config::new()
        .out_dir(&out_dir)
        .compile_fds(descriptors)?;
    Ok(())
}
