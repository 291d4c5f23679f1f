//! [`export_delegate!`](crate::export_delegate): a backend's two external
//! delegate entry points, and [`__private`], what its expansion names.

/// The items [`export_delegate!`](crate::export_delegate) expands to calls
/// of: not an API.
#[doc(hidden)]
pub mod __private {
    pub use crate::delegate::{ReportFn, Source, create, destroy};
    pub use tensorplug_abi::tflite::TfLiteDelegate;
    pub use tensorplug_host_bridge::prelude::Backend;
}

/// Emits `tflite_plugin_create_delegate` and `tflite_plugin_destroy_delegate`
/// (TFLite's external delegate interface) for a
/// [`Backend`](tensorplug_host_bridge::prelude::Backend). Use it once, in a
/// `cdylib` crate (it may also `export_plugin!` the same backend).
///
/// ```ignore
/// tensorplug_host_bridge::export_plugin!(Fpga);
/// tensorplug_delegate::export_delegate!(Fpga);
/// ```
#[macro_export]
macro_rules! export_delegate {
    ($backend:ty) => {
        /// TFLite's external delegate entry point: `num_options` key/value
        /// pairs, and a callback for the reason when it returns null.
        ///
        /// # Safety
        /// Called by the TFLite runtime (or `load_delegate`) with
        /// `num_options` C strings in each array.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn tflite_plugin_create_delegate(
            options_keys: *const *const ::core::ffi::c_char,
            options_values: *const *const ::core::ffi::c_char,
            num_options: usize,
            report_error: ::core::option::Option<$crate::__private::ReportFn>,
        ) -> *mut $crate::__private::TfLiteDelegate {
            let source = $crate::__private::Source {
                open: <$backend as $crate::__private::Backend>::open,
                default_devices: <$backend as $crate::__private::Backend>::DEFAULT_DEVICES,
                device_kinds: <$backend as $crate::__private::Backend>::DEVICE_KINDS,
                device_type: <$backend as $crate::__private::Backend>::DEVICE_TYPE,
            };
            // SAFETY: the caller's contract.
            unsafe {
                $crate::__private::create(
                    source,
                    options_keys,
                    options_values,
                    num_options,
                    report_error,
                )
            }
        }

        /// TFLite's external delegate destructor; idempotent.
        ///
        /// # Safety
        /// `delegate` is null or came from `tflite_plugin_create_delegate`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn tflite_plugin_destroy_delegate(
            delegate: *mut $crate::__private::TfLiteDelegate,
        ) {
            // SAFETY: the caller's contract.
            unsafe { $crate::__private::destroy(delegate) }
        }
    };
}
