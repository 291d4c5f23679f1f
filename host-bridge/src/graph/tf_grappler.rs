//! TF's grappler helpers (`libtensorflow_cc.so.2`), resolved lazily: the
//! nodes a rewrite must keep, and whether an FPGA `_FusedMatMul` kernel is
//! registered.

use super::proto::KernelList;
use crate::error::{Error, Result};
use crate::ffi::tf_api::{OwnedStatus, lookup};
use prost::Message;
use std::collections::HashSet;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;
use tensorplug_abi::tf::{TF_Buffer, TF_GrapplerItem, TF_Status};

type ListSizeFn =
    unsafe extern "C" fn(*const TF_GrapplerItem, *mut c_int, *mut usize, *mut TF_Status);
type ListFn = unsafe extern "C" fn(
    *const TF_GrapplerItem,
    *mut *mut c_char,
    *mut usize,
    c_int,
    *mut c_void,
    usize,
    *mut TF_Status,
);
type KernelsForOpFn = unsafe extern "C" fn(*const c_char, *mut TF_Status) -> *mut TF_Buffer;
type DeleteBufferFn = unsafe extern "C" fn(*mut TF_Buffer);

/// The grappler functions the optimizer calls.
#[derive(Clone, Copy)]
struct GrapplerApi {
    preserve_size: ListSizeFn,
    preserve_list: ListFn,
    kernels_for_op: KernelsForOpFn,
    delete_buffer: DeleteBufferFn,
}

static API: OnceLock<std::result::Result<GrapplerApi, String>> = OnceLock::new();

fn api() -> Result<&'static GrapplerApi> {
    API.get_or_init(resolve)
        .as_ref()
        .map_err(|missing| Error::TfApiMissing(missing.clone()))
}

fn resolve() -> std::result::Result<GrapplerApi, String> {
    // SAFETY: each symbol is transmuted to the signature grappler.h / c_api.h
    // / tf_buffer.h declares.
    unsafe {
        Ok(GrapplerApi {
            preserve_size: std::mem::transmute::<*mut c_void, ListSizeFn>(lookup(
                c"TF_GetNodesToPreserveListSize",
            )?),
            preserve_list: std::mem::transmute::<*mut c_void, ListFn>(lookup(
                c"TF_GetNodesToPreserveList",
            )?),
            kernels_for_op: std::mem::transmute::<*mut c_void, KernelsForOpFn>(lookup(
                c"TF_GetRegisteredKernelsForOp",
            )?),
            delete_buffer: std::mem::transmute::<*mut c_void, DeleteBufferFn>(lookup(
                c"TF_DeleteBuffer",
            )?),
        })
    }
}

/// `item`'s nodes to preserve (fetch, feed and keep nodes).
///
/// # Safety
/// `item` is the live `TF_GrapplerItem` TF passed to `optimize_func`.
pub unsafe fn nodes_to_preserve(item: *const TF_GrapplerItem) -> Result<HashSet<String>> {
    if item.is_null() {
        return Err(Error::InvalidArgument(
            "optimize_func got a null TF_GrapplerItem".into(),
        ));
    }
    let api = api()?;
    let status = OwnedStatus::new()?;
    let check = |what: &str| {
        status.to_result().map_err(|(code, message)| {
            Error::Internal(format!("{what} failed (TF code {}): {message}", code.0))
        })
    };
    let (mut count, mut storage_size): (c_int, usize) = (0, 0);
    // SAFETY: live item (caller), out-pointers to locals, live status.
    unsafe { (api.preserve_size)(item, &mut count, &mut storage_size, status.as_ptr()) };
    check("TF_GetNodesToPreserveListSize")?;
    let count_usize = usize::try_from(count)
        .map_err(|_| Error::Internal(format!("TF reported {count} nodes to preserve")))?;
    let mut values = vec![std::ptr::null_mut::<c_char>(); count_usize];
    let mut lengths = vec![0usize; count_usize];
    let mut storage = vec![0u8; storage_size];
    // SAFETY: arrays of `count` entries and `storage_size` bytes, as TF asked.
    unsafe {
        (api.preserve_list)(
            item,
            values.as_mut_ptr(),
            lengths.as_mut_ptr(),
            count,
            storage.as_mut_ptr().cast(),
            storage_size,
            status.as_ptr(),
        );
    }
    check("TF_GetNodesToPreserveList")?;
    // TF writes the names back to back into `storage`, in `values` order.
    let mut names = HashSet::with_capacity(count_usize);
    let mut offset = 0usize;
    for length in lengths {
        let bytes = offset
            .checked_add(length)
            .and_then(|end| storage.get(offset..end))
            .ok_or_else(|| Error::Internal("TF's preserve list overruns its storage".into()))?;
        names.insert(String::from_utf8_lossy(bytes).into_owned());
        offset += length;
    }
    Ok(names)
}

/// Every kernel TF has registered for `op`, on any device (empty when TF
/// knows no such op).
pub fn kernels_for(op: &CStr) -> Result<KernelList> {
    let api = api()?;
    let status = OwnedStatus::new()?;
    // SAFETY: NUL-terminated op name, live status.
    let buffer = unsafe { (api.kernels_for_op)(op.as_ptr(), status.as_ptr()) };
    let result = status.to_result();
    if buffer.is_null() {
        return Ok(KernelList::default());
    }
    // SAFETY: TF returned a TF_NewBuffer-allocated buffer, read before delete.
    let list = unsafe {
        let bytes = match (*buffer).data.is_null() {
            true => &[][..],
            false => std::slice::from_raw_parts((*buffer).data.cast::<u8>(), (*buffer).length),
        };
        let list = KernelList::decode(bytes);
        (api.delete_buffer)(buffer);
        list
    };
    if result.is_err() {
        return Ok(KernelList::default());
    }
    list.map_err(|e| Error::Internal(format!("TF's KernelList does not decode: {e}")))
}
