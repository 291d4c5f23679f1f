//! [`export_plugin!`](crate::export_plugin): a [`Backend`](crate::Backend)'s
//! four TF entry points. Apart from `backend.rs`, which the bridge's modules
//! import: the macro names every entry module.

/// Emits `SE_InitPlugin`, `TF_InitKernel`, `TF_InitGraph` and
/// `TF_InitProfiler` for a [`Backend`](crate::Backend). Use it once, in a
/// `cdylib` crate.
///
/// An invalid device type does not compile:
/// ```compile_fail
/// # use std::ffi::CStr;
/// # use tensorplug_host_bridge::{Backend, OpenError, devices::DynAccelerator};
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
            $crate::backend::assert_valid_name(<$backend as $crate::Backend>::DEVICE_TYPE);
            $crate::backend::assert_valid_name(<$backend as $crate::Backend>::PLATFORM_NAME);
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
            $crate::backend::install($crate::backend::Plugin::of::<$backend>());
            // SAFETY: TF's contract.
            unsafe { $crate::se::se_init_plugin(params, status) }
        }

        /// TF's kernel entry point.
        #[unsafe(no_mangle)]
        pub extern "C" fn TF_InitKernel() {
            $crate::backend::install($crate::backend::Plugin::of::<$backend>());
            $crate::kernels::tf_init_kernel()
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
            $crate::backend::install($crate::backend::Plugin::of::<$backend>());
            // SAFETY: TF's contract.
            unsafe { $crate::graph::tf_init_graph(params, status) }
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
            $crate::backend::install($crate::backend::Plugin::of::<$backend>());
            // SAFETY: TF's contract.
            unsafe { $crate::profiler::tf_init_profiler(params, status) }
        }
    };
}
