//! [`export_plugin!`](crate::export_plugin): a
//! [`Backend`](crate::prelude::Backend)'s four TF entry points, and
//! [`__private`]: what its expansion, in the vendor's crate, names. Apart
//! from `backend.rs`, which the bridge's modules import: the macro names
//! every entry module.

/// The items [`export_plugin!`](crate::export_plugin) expands to calls of,
/// for its `$crate::__private::` paths: not an API.
#[doc(hidden)]
pub mod __private {
    pub use crate::backend::{Backend, Plugin, assert_valid_name, install};
    pub use crate::graph::tf_init_graph;
    pub use crate::kernels::tf_init_kernel;
    pub use crate::profiler::tf_init_profiler;
    pub use crate::se::se_init_plugin;
}

/// Emits `SE_InitPlugin`, `TF_InitKernel`, `TF_InitGraph` and
/// `TF_InitProfiler` for a [`Backend`](crate::prelude::Backend). Use it
/// once, in a `cdylib` crate.
///
/// An invalid device type does not compile:
/// ```compile_fail
/// # use std::ffi::CStr;
/// # use tensorplug_host_bridge::prelude::*;
/// struct Bad;
/// impl Backend for Bad {
///     const DEVICE_TYPE: &'static CStr = c"Npu2";
///     const VENDOR: &'static CStr = c"x";
///     const DEVICE_KINDS: &'static str = "";
///     fn open(_: &str) -> Result<Box<DynAccelerator>, OpenError> { Err("no".into()) }
/// }
/// tensorplug_host_bridge::export_plugin!(Bad);
/// ```
#[macro_export]
macro_rules! export_plugin {
    ($backend:ty) => {
        const _: () = {
            $crate::__private::assert_valid_name(
                <$backend as $crate::__private::Backend>::DEVICE_TYPE,
            );
            $crate::__private::assert_valid_name(
                <$backend as $crate::__private::Backend>::PLATFORM_NAME,
            );
        };

        /// TF's StreamExecutor entry point.
        ///
        /// # Safety
        /// Called by TF with its registration params and a live status.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn SE_InitPlugin(
            params: *mut $crate::abi::tf::SE_PlatformRegistrationParams,
            status: *mut $crate::abi::tf::TF_Status,
        ) {
            $crate::__private::install($crate::__private::Plugin::of::<$backend>());
            // SAFETY: TF's contract.
            unsafe { $crate::__private::se_init_plugin(params, status) }
        }

        /// TF's kernel entry point.
        #[unsafe(no_mangle)]
        pub extern "C" fn TF_InitKernel() {
            $crate::__private::install($crate::__private::Plugin::of::<$backend>());
            $crate::__private::tf_init_kernel()
        }

        /// TF's graph-optimizer entry point.
        ///
        /// # Safety
        /// Called by TF with its registration params and a live status.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn TF_InitGraph(
            params: *mut $crate::abi::tf::TP_OptimizerRegistrationParams,
            status: *mut $crate::abi::tf::TF_Status,
        ) {
            $crate::__private::install($crate::__private::Plugin::of::<$backend>());
            // SAFETY: TF's contract.
            unsafe { $crate::__private::tf_init_graph(params, status) }
        }

        /// TF's profiler entry point.
        ///
        /// # Safety
        /// Called by TF with its registration params and a live status.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn TF_InitProfiler(
            params: *mut $crate::abi::tf::TF_ProfilerRegistrationParams,
            status: *mut $crate::abi::tf::TF_Status,
        ) {
            $crate::__private::install($crate::__private::Plugin::of::<$backend>());
            // SAFETY: TF's contract.
            unsafe { $crate::__private::tf_init_profiler(params, status) }
        }
    };
}
