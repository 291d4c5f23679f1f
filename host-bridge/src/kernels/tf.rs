//! Thin safe wrappers over TF's kernel C API: a reusable status, owned
//! tensors, the kernel context and the construction context.

use super::failure::{Failure, KernelResult};
use crate::ffi::tf_api::{self, KernelApi, OwnedStatus, TfApi};
use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int, c_void};
use tensorplug_abi::tf::{
    TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE, TF_AllocatorAttributes, TF_Code, TF_DataType, TF_OK,
    TF_OpKernelConstruction, TF_OpKernelContext, TF_Status, TF_StringView, TF_Tensor,
};
use tensorplug_core::accelerator::{MAX_RANK, Shape};

/// A `TF_Status` reset to OK before each call it is handed to.
pub struct Status {
    api: &'static TfApi,
    owned: OwnedStatus,
}

impl Status {
    /// `TF_NewStatus()`.
    pub fn new() -> KernelResult<Self> {
        Ok(Self {
            api: tf_api::api()?,
            owned: OwnedStatus::new()?,
        })
    }

    /// The status, set to OK, for the next TF call.
    pub fn fresh(&self) -> *mut TF_Status {
        // SAFETY: a live status; the message is a static C string TF copies.
        unsafe { (self.api.set_status)(self.owned.as_ptr(), TF_OK, c"".as_ptr()) };
        self.owned.as_ptr()
    }

    /// `Err` naming `what` if the last call failed.
    pub fn check(&self, what: &str) -> KernelResult<()> {
        self.owned
            .to_result()
            .map_err(|failure| Failure::from_tf(what, failure))
    }

    /// Sets `code` and `message` (for `*_Failure`).
    pub fn set(&self, code: TF_Code, message: &str) -> *mut TF_Status {
        let text = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
        // SAFETY: live status; NUL-terminated message that TF copies.
        unsafe { (self.api.set_status)(self.owned.as_ptr(), code, text.as_ptr()) };
        self.owned.as_ptr()
    }
}

/// Borrows a `TF_StringView` as text (empty if null or not UTF-8).
///
/// # Safety
/// `view` points to `len` readable bytes that outlive `'a`, or is null.
unsafe fn view_str<'a>(view: TF_StringView) -> &'a str {
    if view.data.is_null() {
        return "";
    }
    // SAFETY: caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(view.data.cast::<u8>(), view.len) };
    std::str::from_utf8(bytes).unwrap_or("")
}

/// A tensor TF handed us, deleted (`TF_DeleteTensor`) on drop.
pub struct Tensor {
    api: &'static KernelApi,
    raw: *mut TF_Tensor,
    /// False for a view of a tensor the [`Context`] holds (half precision).
    owned: bool,
}

impl Tensor {
    /// The element type.
    pub fn dtype(&self) -> TF_DataType {
        // SAFETY: live tensor.
        unsafe { (self.api.tensor_type)(self.raw) }
    }

    /// The buffer (a device handle for device tensors, host memory otherwise).
    pub fn data(&self) -> *mut c_void {
        // SAFETY: live tensor.
        unsafe { (self.api.tensor_data)(self.raw) }
    }

    /// Size of the buffer in bytes.
    pub fn byte_size(&self) -> usize {
        // SAFETY: live tensor.
        unsafe { (self.api.tensor_byte_size)(self.raw) }
    }

    /// The first `len` bytes of a host-memory tensor (all of them for
    /// `None`); an error if it has fewer or no data.
    pub fn host_bytes(&self, len: Option<usize>) -> KernelResult<&[u8]> {
        let (data, size) = (self.data().cast::<u8>(), self.byte_size());
        let len = len.unwrap_or(size);
        if len > size || (len > 0 && data.is_null()) {
            return Err(Failure::invalid(format!(
                "a {len}-byte host input in a {size}-byte tensor"
            )));
        }
        if len == 0 {
            return Ok(&[]);
        }
        // SAFETY: a HostMemory input of at least `len` bytes, alive as long
        // as `self` (the borrow).
        Ok(unsafe { std::slice::from_raw_parts(data, len) })
    }

    /// The shape; ranks above [`MAX_RANK`] are not supported on the device.
    pub fn shape(&self) -> KernelResult<Shape> {
        // SAFETY: live tensor.
        let rank = unsafe { (self.api.num_dims)(self.raw) };
        let rank = usize::try_from(rank).unwrap_or(usize::MAX);
        if rank > MAX_RANK {
            return Err(Failure::unimplemented(format!(
                "tensors of rank {rank} (the device supports rank <= {MAX_RANK})"
            )));
        }
        let mut dims = [0u64; MAX_RANK];
        for (axis, dim) in dims[..rank].iter_mut().enumerate() {
            // SAFETY: live tensor, axis < rank (fits c_int: rank <= 6).
            let size = unsafe { (self.api.dim)(self.raw, axis as c_int) };
            *dim = u64::try_from(size).map_err(|_| Failure::invalid("negative dimension"))?;
        }
        Shape::new(&dims[..rank]).ok_or_else(|| Failure::invalid("bad rank"))
    }
}

impl Tensor {
    fn owned(api: &'static KernelApi, raw: *mut TF_Tensor) -> Self {
        Self {
            api,
            raw,
            owned: true,
        }
    }

    /// Adopts a tensor TF handed over (deleted on drop).
    ///
    /// # Safety
    /// `raw` is a live `TF_Tensor` whose ownership passes to the result.
    pub unsafe fn adopt(raw: *mut TF_Tensor) -> KernelResult<Self> {
        if raw.is_null() {
            return Err(Failure::invalid("TensorFlow passed a null TF_Tensor"));
        }
        Ok(Self::owned(tf_api::kernel_api()?, raw))
    }

    /// A view that the owner outlives.
    fn view(&self) -> Self {
        Self {
            api: self.api,
            raw: self.raw,
            owned: false,
        }
    }
}

/// A tensor a kernel keeps across compute calls (its buffer is TF's,
/// reference-counted; it is only read once made).
pub struct Held(Tensor);

// SAFETY: a `TF_Tensor` may be read and deleted from any thread; `Held`
// gives out only shared access.
unsafe impl Send for Held {}
// SAFETY: as above.
unsafe impl Sync for Held {}

impl Held {
    /// Keeps `tensor` (an owned one: a view's owner would outlive it).
    pub fn new(tensor: Tensor) -> Self {
        debug_assert!(tensor.owned, "a held tensor owns its reference");
        Self(tensor)
    }

    /// The tensor.
    pub fn get(&self) -> &Tensor {
        &self.0
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: TF gave us ownership of `raw`; deleted once.
            unsafe { (self.api.delete_tensor)(self.raw) }
        }
    }
}

/// TF's dims for `shape`.
fn tf_dims(shape: &Shape) -> ([i64; MAX_RANK], c_int) {
    let mut dims = [0i64; MAX_RANK];
    for (out, &dim) in dims.iter_mut().zip(shape.dims()) {
        *out = i64::try_from(dim).unwrap_or(i64::MAX);
    }
    (dims, shape.dims().len() as c_int)
}

/// The `TF_OpKernelContext` of one compute call.
pub struct Context {
    api: &'static KernelApi,
    raw: *mut TF_OpKernelContext,
    status: Status,
    half: RefCell<Half>,
}

/// A widened compute call (`ops/half.rs`: half-precision ops, int8
/// `BatchMatMulV3`): the float32 temporaries the kernel sees instead of
/// its inputs and outputs.
#[derive(Default)]
pub struct Half {
    /// The type widened (a half type, int8), when the call is one.
    pub dtype: Option<TF_DataType>,
    /// Input index and its float32 copy.
    pub inputs: Vec<(usize, Tensor)>,
    /// The output TF allocated, the float32 one the kernel wrote, and
    /// their shape.
    pub outputs: Vec<(Tensor, Tensor, Shape)>,
}

impl Context {
    /// Wraps `raw`.
    ///
    /// # Safety
    /// `raw` is the live context of the current compute call.
    pub unsafe fn new(raw: *mut TF_OpKernelContext) -> KernelResult<Self> {
        Ok(Self {
            api: tf_api::kernel_api()?,
            raw,
            status: Status::new()?,
            half: RefCell::default(),
        })
    }

    /// `TF_GetOpKernelName`: the node name (valid while the kernel lives).
    pub fn node_name(&self) -> &str {
        // SAFETY: live context; the name lives as long as the kernel, which
        // outlives this compute call and so this borrow.
        unsafe { view_str((self.api.op_kernel_name)(self.raw)) }
    }

    /// The raw context, for TF's calls that take it whole (`TF_AddNVariant`).
    pub fn raw(&self) -> *mut TF_OpKernelContext {
        self.raw
    }

    /// `TF_GetStream`: the stream this kernel's device work goes to.
    pub(crate) fn stream(&self) -> KernelResult<&crate::registry::Stream> {
        // SAFETY: live context and status.
        let raw = unsafe { (self.api.get_stream)(self.raw, self.status.fresh()) };
        self.status.check("TF_GetStream")?;
        // SAFETY: TF hands back the SP_Stream our create_stream made.
        unsafe { crate::se::handles::stream_from_raw(raw) }.ok_or_else(|| {
            Failure::from(crate::error::Error::Internal(
                "TF_GetStream gave null".into(),
            ))
        })
    }

    /// `TF_NumInputs`: how many inputs the node has (lists flattened).
    pub fn num_inputs(&self) -> usize {
        // SAFETY: live context.
        usize::try_from(unsafe { (self.api.num_inputs)(self.raw) }).unwrap_or(0)
    }

    /// `TF_GetInput(index)`, checked to be f32 unless `any_dtype`.
    pub fn input(&self, index: usize, any_dtype: bool) -> KernelResult<Tensor> {
        if let Some((_, f32_copy)) = self.half.borrow().inputs.iter().find(|(i, _)| *i == index) {
            return Ok(f32_copy.view());
        }
        let mut raw = std::ptr::null_mut();
        let what = || format!("input {index}");
        let index_c = c_int::try_from(index).map_err(|_| Failure::invalid(what()))?;
        // SAFETY: live context, out-pointer and status.
        unsafe { (self.api.get_input)(self.raw, index_c, &mut raw, self.status.fresh()) };
        self.status.check(&format!("TF_GetInput({index})"))?;
        if raw.is_null() {
            return Err(Failure::invalid(format!("{} is missing", what())));
        }
        let tensor = Tensor::owned(self.api, raw);
        if !any_dtype && tensor.dtype() != TF_DataType::TF_FLOAT {
            return Err(Failure::unimplemented(format!(
                "{} is {:?}; the device computes float32 only",
                what(),
                tensor.dtype()
            )));
        }
        Ok(tensor)
    }

    /// Output 0 of `shape`, reusing one of `candidates` (inputs) when TF can.
    pub fn output(&self, shape: &Shape, candidates: &[c_int]) -> KernelResult<Tensor> {
        self.output_at(0, shape, candidates)
    }

    /// Output `index` of `shape`, reusing one of `candidates` when TF can.
    pub fn output_at(
        &self,
        index: c_int,
        shape: &Shape,
        candidates: &[c_int],
    ) -> KernelResult<Tensor> {
        if self.half.borrow().dtype.is_some() {
            let half = self.allocate_output(index, shape, &[])?;
            let f32_out = self.temp(shape)?;
            let view = f32_out.view();
            self.half.borrow_mut().outputs.push((half, f32_out, *shape));
            return Ok(view);
        }
        self.allocate_output(index, shape, candidates)
    }

    fn allocate_output(
        &self,
        index: c_int,
        shape: &Shape,
        candidates: &[c_int],
    ) -> KernelResult<Tensor> {
        let (dims, rank) = tf_dims(shape);
        let mut forwarded = -1;
        // SAFETY: live context; arrays of the lengths passed; live status.
        let raw = unsafe {
            (self.api.forward_input_or_allocate_output)(
                self.raw,
                candidates.as_ptr(),
                candidates.len() as c_int,
                index,
                dims.as_ptr(),
                rank,
                &mut forwarded,
                self.status.fresh(),
            )
        };
        self.status.check("allocating the output")?;
        if raw.is_null() {
            return Err(Failure::invalid("TF allocated no output"));
        }
        Ok(Tensor::owned(self.api, raw))
    }

    /// A device temporary of `shape` (f32), valid during this call.
    pub fn temp(&self, shape: &Shape) -> KernelResult<Tensor> {
        self.temp_of(TF_DataType::TF_FLOAT, shape)
    }

    /// A device temporary of `dtype` and `shape`; valid during this call,
    /// or as long as it is held (`Held`).
    pub fn temp_of(&self, dtype: TF_DataType, shape: &Shape) -> KernelResult<Tensor> {
        let (dims, rank) = tf_dims(shape);
        let mut attrs = TF_AllocatorAttributes {
            struct_size: TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE,
            on_host: 0,
        };
        // SAFETY: live context; dims of `rank` entries; live attrs and status.
        let raw = unsafe {
            (self.api.allocate_temp)(
                self.raw,
                dtype,
                dims.as_ptr(),
                rank,
                &mut attrs,
                self.status.fresh(),
            )
        };
        self.status.check("allocating a temporary")?;
        if raw.is_null() {
            return Err(Failure::invalid("TF allocated no temporary"));
        }
        Ok(Tensor::owned(self.api, raw))
    }

    /// `TF_SetOutput`: output `index` shares `tensor`'s buffer (no copy).
    pub fn set_output(&self, index: usize, tensor: &Tensor) -> KernelResult<()> {
        let index = c_int::try_from(index).map_err(|_| Failure::invalid("output index"))?;
        // SAFETY: live context, tensor and status; TF takes its own reference.
        unsafe { (self.api.set_output)(self.raw, index, tensor.raw, self.status.fresh()) };
        self.status.check("TF_SetOutput")
    }

    /// `TF_OpKernelContext_Failure` with `code` and `message`.
    pub fn fail(&self, code: TF_Code, message: &str) {
        let status = self.status.set(code, message);
        // SAFETY: live context and status (TF copies it).
        unsafe { (self.api.context_failure)(self.raw, status) };
    }

    /// The widened state of this call (`ops/half.rs`).
    pub fn half(&self) -> std::cell::RefMut<'_, Half> {
        self.half.borrow_mut()
    }
}

/// The attributes a kernel reads at construction: TF's, through
/// [`Construction`], or a fuzzer's (`kernels::ops::fuzzing`).
pub trait AttrSource {
    /// A string attribute.
    fn string(&self, name: &CStr) -> KernelResult<String>;
    /// A list-of-strings attribute.
    fn string_list(&self, name: &CStr) -> KernelResult<Vec<String>>;
    /// An int attribute.
    fn int(&self, name: &CStr) -> KernelResult<i32>;
    /// A list-of-ints attribute.
    fn int_list(&self, name: &CStr) -> KernelResult<Vec<i64>>;
}

impl AttrSource for Construction {
    fn string(&self, name: &CStr) -> KernelResult<String> {
        self.string_attr(name)
    }
    fn string_list(&self, name: &CStr) -> KernelResult<Vec<String>> {
        self.string_list_attr(name)
    }
    fn int(&self, name: &CStr) -> KernelResult<i32> {
        self.int_attr(name)
    }
    fn int_list(&self, name: &CStr) -> KernelResult<Vec<i64>> {
        self.int_list_attr(name)
    }
}

/// The `TF_OpKernelConstruction` of one kernel instance.
pub struct Construction {
    api: &'static KernelApi,
    raw: *mut TF_OpKernelConstruction,
    status: Status,
}

impl Construction {
    /// Wraps `raw`.
    ///
    /// # Safety
    /// `raw` is the live construction context of the current create call.
    pub unsafe fn new(raw: *mut TF_OpKernelConstruction) -> KernelResult<Self> {
        Ok(Self {
            api: tf_api::kernel_api()?,
            raw,
            status: Status::new()?,
        })
    }

    /// The node name.
    pub fn node_name(&self) -> String {
        // SAFETY: live construction context; the view is copied at once.
        unsafe { view_str((self.api.construction_name)(self.raw)) }.to_owned()
    }

    /// A bool attribute.
    pub fn bool_attr(&self, name: &CStr) -> KernelResult<bool> {
        let mut value = 0u8;
        // SAFETY: live context, NUL-terminated name, out-pointer, status.
        unsafe {
            (self.api.get_attr_bool)(self.raw, name.as_ptr(), &mut value, self.status.fresh())
        };
        self.status.check(&format!("attribute {name:?}"))?;
        Ok(value != 0)
    }

    /// A float attribute.
    pub fn float_attr(&self, name: &CStr) -> KernelResult<f32> {
        let get = self.api.get_attr_float.ok_or_else(|| {
            Failure::unimplemented(
                "this TensorFlow does not export TF_OpKernelConstruction_GetAttrFloat",
            )
        })?;
        let mut value = 0f32;
        // SAFETY: as in `bool_attr`.
        unsafe { get(self.raw, name.as_ptr(), &mut value, self.status.fresh()) };
        self.status.check(&format!("attribute {name:?}"))?;
        Ok(value)
    }

    /// An int attribute.
    pub fn int_attr(&self, name: &CStr) -> KernelResult<i32> {
        let mut value = 0i32;
        // SAFETY: as in `bool_attr`.
        unsafe {
            (self.api.get_attr_int32)(self.raw, name.as_ptr(), &mut value, self.status.fresh())
        };
        self.status.check(&format!("attribute {name:?}"))?;
        Ok(value)
    }

    /// An int64 attribute.
    pub fn int64_attr(&self, name: &CStr) -> KernelResult<i64> {
        let Some(get) = self.api.get_attr_int64 else {
            return Err(Failure::unimplemented(
                "this TensorFlow has no TF_OpKernelConstruction_GetAttrInt64",
            ));
        };
        let mut value = 0i64;
        // SAFETY: as in `bool_attr`.
        unsafe { get(self.raw, name.as_ptr(), &mut value, self.status.fresh()) };
        self.status.check(&format!("attribute {name:?}"))?;
        Ok(value)
    }

    /// A list-of-ints attribute (at most 16 entries; ours are 4 or 8).
    pub fn int_list_attr(&self, name: &CStr) -> KernelResult<Vec<i64>> {
        let (mut list_size, mut total_size) = (0i32, 0i32);
        // SAFETY: as in `string_attr`.
        unsafe {
            (self.api.get_attr_size)(
                self.raw,
                name.as_ptr(),
                &mut list_size,
                &mut total_size,
                self.status.fresh(),
            )
        };
        self.status.check(&format!("attribute {name:?}"))?;
        let mut values = [0i64; 16];
        let count = usize::try_from(list_size).unwrap_or(0);
        if count > values.len() {
            return Err(Failure::invalid(format!(
                "attribute {name:?} has {count} entries"
            )));
        }
        // SAFETY: the buffer holds `count` values; live context and status.
        unsafe {
            (self.api.get_attr_int64_list)(
                self.raw,
                name.as_ptr(),
                values.as_mut_ptr(),
                count as c_int,
                self.status.fresh(),
            )
        };
        self.status.check(&format!("attribute {name:?}"))?;
        Ok(values[..count].to_vec())
    }

    /// A string attribute.
    pub fn string_attr(&self, name: &CStr) -> KernelResult<String> {
        Ok(String::from_utf8_lossy(&self.bytes_attr(name)?).into_owned())
    }

    /// A string attribute as bytes, whatever its length (a program's
    /// segment).
    pub fn bytes_attr(&self, name: &CStr) -> KernelResult<Vec<u8>> {
        let (mut list_size, mut total_size) = (0i32, 0i32);
        // SAFETY: live context, name, out-pointers, status.
        unsafe {
            (self.api.get_attr_size)(
                self.raw,
                name.as_ptr(),
                &mut list_size,
                &mut total_size,
                self.status.fresh(),
            )
        };
        self.status.check(&format!("attribute {name:?}"))?;
        let mut buffer = vec![0u8; usize::try_from(total_size).unwrap_or(0)];
        // SAFETY: the buffer holds `buffer.len()` bytes.
        unsafe {
            (self.api.get_attr_string)(
                self.raw,
                name.as_ptr(),
                buffer.as_mut_ptr().cast::<c_char>(),
                buffer.len(),
                self.status.fresh(),
            )
        };
        self.status.check(&format!("attribute {name:?}"))?;
        Ok(buffer)
    }

    /// A list-of-strings attribute (up to 8 entries of 256 bytes in all).
    pub fn string_list_attr(&self, name: &CStr) -> KernelResult<Vec<String>> {
        const MAX: usize = 64;
        const MAX_BYTES: usize = 64 * 1024;
        let (mut list_size, mut total_size) = (0i32, 0i32);
        // SAFETY: as in `string_attr`.
        unsafe {
            (self.api.get_attr_size)(
                self.raw,
                name.as_ptr(),
                &mut list_size,
                &mut total_size,
                self.status.fresh(),
            )
        };
        self.status.check(&format!("attribute {name:?}"))?;
        let count = usize::try_from(list_size).unwrap_or(0);
        if count == 0 {
            return Ok(Vec::new());
        }
        let total = usize::try_from(total_size).unwrap_or(usize::MAX);
        if count > MAX || total > MAX_BYTES {
            return Err(Failure::unimplemented(format!(
                "attribute {name:?} has {count} entries of {total_size} bytes; at most {MAX} \
                 entries of {MAX_BYTES} bytes are supported"
            )));
        }
        let mut values = vec![std::ptr::null_mut::<c_char>(); count];
        let mut lengths = vec![0usize; count];
        let mut storage = vec![0u8; total.max(1)];
        // SAFETY: arrays of `count` entries and a storage of the size TF gave.
        unsafe {
            (self.api.get_attr_string_list)(
                self.raw,
                name.as_ptr(),
                values.as_mut_ptr(),
                lengths.as_mut_ptr(),
                count as c_int,
                storage.as_mut_ptr().cast::<c_void>(),
                storage.len(),
                self.status.fresh(),
            )
        };
        self.status.check(&format!("attribute {name:?}"))?;
        Ok(values
            .iter()
            .zip(&lengths)
            .map(|(&ptr, &len)| {
                if ptr.is_null() {
                    return String::new();
                }
                // SAFETY: TF points each entry into `storage` with its length.
                let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
                String::from_utf8_lossy(bytes).into_owned()
            })
            .collect())
    }

    /// `TF_OpKernelConstruction_Failure` with `code` and `message`.
    pub fn fail(&self, code: TF_Code, message: &str) {
        let status = self.status.set(code, message);
        // SAFETY: live context and status (TF copies it).
        unsafe { (self.api.construction_failure)(self.raw, status) };
    }
}
