//! TensorFlow's own C functions (`TF_SetStatus`, `TF_NewStatus`, …), resolved
//! lazily with `dlsym(RTLD_DEFAULT, …)`.
//!
//! They live in `libtensorflow_framework.so.2`, which TF's Python loads
//! `RTLD_GLOBAL` before it loads a plugin, so the lookup finds them. Nothing
//! links against TF: the cdylib has no undefined `TF_*` symbols, and Rust
//! test binaries of the rlib link and run without TF (they [`install`] a
//! table of their own).

use crate::error::{Error, Result};
use std::ffi::{CStr, c_char, c_void};
use std::sync::OnceLock;
use tensorplug_abi::tf::{TF_Code, TF_Status};

/// The TF functions the bridge calls.
#[derive(Clone, Copy, Debug)]
pub struct TfApi {
    /// `void TF_SetStatus(TF_Status*, TF_Code, const char*)`.
    pub set_status: unsafe extern "C" fn(*mut TF_Status, TF_Code, *const c_char),
    /// `TF_Code TF_GetCode(const TF_Status*)`.
    pub get_code: unsafe extern "C" fn(*const TF_Status) -> TF_Code,
    /// `const char* TF_Message(const TF_Status*)`.
    pub message: unsafe extern "C" fn(*const TF_Status) -> *const c_char,
    /// `TF_Status* TF_NewStatus(void)`.
    pub new_status: unsafe extern "C" fn() -> *mut TF_Status,
    /// `void TF_DeleteStatus(TF_Status*)`.
    pub delete_status: unsafe extern "C" fn(*mut TF_Status),
}

static API: OnceLock<std::result::Result<TfApi, String>> = OnceLock::new();

/// Installs `api` instead of looking the functions up (tests, embedders).
/// Returns `false` if a table was already resolved or installed.
pub fn install(api: TfApi) -> bool {
    API.set(Ok(api)).is_ok()
}

/// The resolved table, or an error naming the first missing symbol.
pub fn api() -> Result<&'static TfApi> {
    API.get_or_init(resolve)
        .as_ref()
        .map_err(|missing| Error::TfApiMissing(missing.clone()))
}

fn resolve() -> std::result::Result<TfApi, String> {
    // SAFETY: each symbol gets the signature tf_status.h declares for it.
    unsafe {
        Ok(TfApi {
            set_status: symbol(c"TF_SetStatus")?,
            get_code: symbol(c"TF_GetCode")?,
            message: symbol(c"TF_Message")?,
            new_status: symbol(c"TF_NewStatus")?,
            delete_status: symbol(c"TF_DeleteStatus")?,
        })
    }
}

/// Looks `name` up in the process's global scope as a function of type `F`.
///
/// # Safety
/// `F` must be a function pointer type matching the symbol's C signature.
unsafe fn symbol<F: Copy>(name: &CStr) -> std::result::Result<F, String> {
    const { assert!(size_of::<F>() == size_of::<*mut c_void>()) };
    // SAFETY: `name` is NUL-terminated; RTLD_DEFAULT searches the global scope.
    let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if address.is_null() {
        return Err(name.to_string_lossy().into_owned());
    }
    // SAFETY: non-null code address; the caller guarantees the signature.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
}

/// A status TF's callbacks write into, deleted on drop.
pub struct OwnedStatus {
    api: &'static TfApi,
    raw: *mut TF_Status,
}

impl OwnedStatus {
    /// `TF_NewStatus()`.
    pub fn new() -> Result<Self> {
        let api = api()?;
        // SAFETY: TF_NewStatus has no preconditions.
        let raw = unsafe { (api.new_status)() };
        if raw.is_null() {
            return Err(Error::Internal("TF_NewStatus returned null".into()));
        }
        Ok(Self { api, raw })
    }

    /// The pointer to hand to TF.
    pub fn as_ptr(&self) -> *mut TF_Status {
        self.raw
    }

    /// `Ok` for `TF_OK`, else the code and TF's message.
    pub fn to_result(&self) -> std::result::Result<(), (TF_Code, String)> {
        // SAFETY: `raw` is a live status from TF_NewStatus.
        let code = unsafe { (self.api.get_code)(self.raw) };
        if code == tensorplug_abi::tf::TF_OK {
            return Ok(());
        }
        // SAFETY: as above; TF_Message returns a NUL-terminated string or null.
        let message = unsafe { (self.api.message)(self.raw) };
        let text = if message.is_null() {
            String::new()
        } else {
            // SAFETY: non-null and NUL-terminated, valid while the status lives.
            unsafe { CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned()
        };
        Err((code, text))
    }
}

impl Drop for OwnedStatus {
    fn drop(&mut self) {
        // SAFETY: `raw` came from TF_NewStatus and is deleted once.
        unsafe { (self.api.delete_status)(self.raw) }
    }
}
