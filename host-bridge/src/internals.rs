//! The bridge's internals that the workspace's own tests and fuzz targets
//! reach, at their paths inside the bridge (`internals::graph::rewrite` is
//! `graph::rewrite`). Only with the feature `internals`, which no plugin
//! enables: not an API, no stability.

/// The graph pass and TF's `GraphDef` protos.
pub mod graph {
    pub use crate::graph::{proto, rewrite};
}

/// The kernels' shape rules and the fuzz targets' entry points.
pub mod kernels {
    pub use crate::kernels::shapes;

    /// What the kernels derive from attributes, for `fuzz`'s `kernel_attrs`.
    pub mod ops {
        pub use crate::kernels::ops::fuzzing;
    }
}

/// The device core, run on a driver without TF.
pub mod registry {
    pub use crate::registry::{DeviceCore, OpLabel};
}

/// The host-device clock mapping.
pub mod profiler {
    pub use crate::profiler::{WallClock, sync_pair};
}

/// Installing a plugin without TF's entry points.
pub mod backend {
    pub use crate::backend::{Plugin, install};
}
