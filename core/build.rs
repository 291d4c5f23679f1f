//! Generates the XPlane prost types from `proto/xplane.proto` when the
//! `alloc` feature is on. Uses `protox` (pure Rust), so no `protoc` is needed.
//! `protox` and `prost-build` are optional build-dependencies enabled by
//! `alloc`, so no-alloc (embedded) builds don't compile them at all.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo::rerun-if-changed=proto/xplane.proto");
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_ALLOC").is_some() {
        generate()?;
    }
    Ok(())
}

#[cfg(feature = "alloc")]
fn generate() -> Result<(), Box<dyn std::error::Error>> {
    let descriptors = protox::compile(["xplane.proto"], ["proto"])?;
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    prost_build::Config::new()
        // no_std has no HashMap: every map field becomes a BTreeMap.
        .btree_map(["."])
        .out_dir(&out_dir)
        .compile_fds(descriptors)?;
    Ok(())
}

#[cfg(not(feature = "alloc"))]
fn generate() -> Result<(), Box<dyn std::error::Error>> {
    Err("the `alloc` feature is set but the build script was built without it".into())
}
