//! Nothing: `cargo test --doc` skips a package without a library, and its
//! dependencies then resolve to other features (docs/ci.md).
