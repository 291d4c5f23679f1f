//! The runtime's graph, read through `TfLiteContext`: every pointer the
//! runtime hands us is checked before it is read, and the runtime itself
//! is checked against our mirrors before the delegate claims any node
//! ([`Graph::new`], then [`Graph::check_tensor_layout`] in `Prepare`).

use core::ffi::{CStr, c_int};
use std::ffi::CString;
use tensorplug_abi::tflite::{
    TfLiteAffineQuantization, TfLiteAllocationType, TfLiteContext, TfLiteIntArray, TfLiteNode,
    TfLiteQuantizationType, TfLiteRegistration, TfLiteStatus, TfLiteTensor, TfLiteType,
};

/// The largest builtin code a runtime of TF 2.15 … 2.21 uses is about 210;
/// a registration whose code is beyond this was not read at the right offset.
const MAX_BUILTIN_CODE: i32 = 4096;

/// A runtime context, checked.
pub struct Graph {
    ctx: *mut TfLiteContext,
    /// The nodes [`Graph::producer`] searches: the graph's nodes as the
    /// delegate's `Prepare` saw them (`None`: the current execution plan).
    nodes: Option<Vec<i32>>,
}

/// One tensor as the delegate needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorView {
    pub index: i32,
    pub name: String,
    pub dtype: TfLiteType,
    pub dims: Vec<usize>,
    pub bytes: usize,
    /// The model's read-only data (weights): `kTfLiteMmapRo`.
    pub constant: bool,
    /// Its shape is known only when the op before it runs (`kTfLiteDynamic`).
    pub dynamic: bool,
    pub data: *mut u8,
    pub scale: f32,
    pub zero_point: i32,
    /// How many (scale, zero point) pairs its affine quantization has: 0
    /// without one, 1 per tensor, more per channel. Counted from the
    /// zero points (`TfLiteIntArray`, whose layout every runtime shares),
    /// not the scales (`TfLiteFloatArray`, whose does not); but TF 2.20
    /// keeps one zero point for a per-channel tensor, so one zero point
    /// with a scale array the size of the quantized axis is per-channel.
    pub quant_channels: usize,
    /// Per-channel (scale, zero point) pairs when `quant_channels > 1`:
    /// read with [`channel_scales`]'s layout check, or why they could not be.
    pub channels: Result<Vec<(f32, i32)>, String>,
    /// The axis the per-channel pairs run along (`quantized_dimension`).
    pub quant_axis: i32,
}

#[cfg(test)]
impl TensorView {
    /// A tensor for tests: int8 elements are 1 byte, the others 4; a
    /// constant when `data` is set; no quantization.
    pub fn for_test(index: i32, dtype: TfLiteType, dims: &[usize], data: *mut u8) -> Self {
        let size = if dtype == TfLiteType::kTfLiteInt8 {
            1
        } else {
            4
        };
        Self {
            index,
            name: format!("t{index}"),
            dtype,
            dims: dims.to_vec(),
            bytes: dims.iter().product::<usize>() * size,
            constant: !data.is_null(),
            dynamic: false,
            data,
            scale: 0.0,
            zero_point: 0,
            quant_channels: 0,
            channels: Ok(Vec::new()),
            quant_axis: 0,
        }
    }
}

/// One node: its op and tensors.
#[derive(Clone, Debug)]
pub struct NodeView {
    pub builtin_code: i32,
    pub version: i32,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    pub builtin_data: *const core::ffi::c_void,
}

#[cfg(test)]
impl NodeView {
    /// A version-1 node for tests: `inputs`, output tensor 9, no params.
    pub fn for_test(code: i32, inputs: &[i32]) -> Self {
        Self {
            builtin_code: code,
            version: 1,
            inputs: inputs.to_vec(),
            outputs: vec![9],
            builtin_data: core::ptr::null(),
        }
    }
}

impl Graph {
    /// Checks `ctx`: non-null, and every function we call present. A
    /// runtime that fails is one whose version the delegate does not know;
    /// the error says so. The delegate's `Prepare` also runs
    /// [`Self::check_tensor_layout`] before it claims any node; the kernel
    /// callbacks, on the same context afterwards, do not repeat it.
    ///
    /// # Safety
    /// `ctx` is null or the runtime's live context, for as long as `self`.
    pub unsafe fn new(ctx: *mut TfLiteContext) -> Result<Self, String> {
        if ctx.is_null() {
            return Err("the runtime passed a null TfLiteContext".into());
        }
        // SAFETY: non-null and live (caller).
        let c = unsafe { &*ctx };
        let missing: Vec<&str> = [
            ("GetExecutionPlan", c.GetExecutionPlan.is_none()),
            ("GetNodeAndRegistration", c.GetNodeAndRegistration.is_none()),
            (
                "ReplaceNodeSubsetsWithDelegateKernels",
                c.ReplaceNodeSubsetsWithDelegateKernels.is_none(),
            ),
            ("ReportError", c.ReportError.is_none()),
            ("ResizeTensor", c.ResizeTensor.is_none()),
            (
                "PreviewDelegatePartitioning",
                c.PreviewDelegatePartitioning.is_none(),
            ),
        ]
        .into_iter()
        .filter(|(_, absent)| *absent)
        .map(|(name, _)| name)
        .collect();
        if !missing.is_empty() {
            return Err(format!(
                "this TFLite runtime's TfLiteContext lacks {}: its version is not one the \
                 delegate supports (TF 2.15 … 2.21's TFLite)",
                missing.join(", ")
            ));
        }
        Ok(Self { ctx, nodes: None })
    }

    /// The same graph, with [`Graph::producer`] searching `nodes`: a
    /// kernel's callbacks run after the runtime replaced the delegated
    /// nodes in its plan, and must see the graph the partitioning saw.
    pub fn with_nodes(self, nodes: Vec<i32>) -> Self {
        Self {
            nodes: Some(nodes),
            ..self
        }
    }

    /// The node that writes tensor `t`, if any.
    pub fn producer(&self, t: i32) -> Result<Option<NodeView>, String> {
        let plan = match &self.nodes {
            Some(nodes) => nodes.clone(),
            None => self.plan()?,
        };
        for index in plan {
            let node = self.node(index)?;
            if node.outputs.contains(&t) {
                return Ok(Some(node));
            }
        }
        Ok(None)
    }

    /// The raw context, for the runtime's callbacks.
    pub fn raw(&self) -> *mut TfLiteContext {
        self.ctx
    }

    fn c(&self) -> &TfLiteContext {
        // SAFETY: checked non-null and live in `new`.
        unsafe { &*self.ctx }
    }

    /// Our `TfLiteTensor` against the runtime's: when the runtime has
    /// `GetTensor` (TFLite Micro-style runtimes; TFLite's own leaves it
    /// null), `GetTensor(i)` must be `&tensors[i]` at our stride; and in
    /// every tensor of a fixed-size element type, `bytes` must be its
    /// elements times the element size, which a wrong stride or a moved
    /// field breaks at the first tensor it shifts.
    pub fn check_tensor_layout(&self) -> Result<(), String> {
        let c = self.c();
        let n = c.tensors_size;
        if n == 0 {
            return Ok(());
        }
        if c.tensors.is_null() {
            return Err("the runtime has tensors but a null tensor array".into());
        }
        let unsupported = "its version is not one the delegate supports (TF 2.15 … 2.21's TFLite)";
        if let Some(get) = c.GetTensor {
            for i in [0, n - 1] {
                let i_c = c_int::try_from(i).map_err(|_| format!("{n} tensors"))?;
                // SAFETY: the runtime's function, with its context and an
                // index below `tensors_size`.
                let theirs = unsafe { get(self.ctx, i_c) };
                if theirs != c.tensors.wrapping_add(i) {
                    return Err(format!(
                        "this TFLite runtime's TfLiteTensor is not {} bytes: {unsupported}",
                        size_of::<TfLiteTensor>()
                    ));
                }
            }
        }
        for i in 0..n {
            // SAFETY: below `tensors_size`; a stride error shows at the
            // first tensor it shifts, checked before the next is read.
            let t = unsafe { &*c.tensors.add(i) };
            let Some(size) = element_size(t.r#type) else {
                continue;
            };
            if t.dims.is_null() || t.bytes == 0 {
                continue;
            }
            // SAFETY: the tensor's live dims.
            let dims = unsafe { (*t.dims).as_slice() };
            let elements = dims
                .iter()
                .try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?));
            if elements.and_then(|e| e.checked_mul(size)) != Some(t.bytes) {
                return Err(format!(
                    "tensor {i} reads as {:?} of dims {dims:?} in {} bytes through the \
                     delegate's TfLiteTensor: this runtime's TfLiteTensor differs; {unsupported}",
                    t.r#type, t.bytes
                ));
            }
        }
        Ok(())
    }

    /// The node indices of the execution plan, in order.
    pub fn plan(&self) -> Result<Vec<i32>, String> {
        let get = self
            .c()
            .GetExecutionPlan
            .ok_or("GetExecutionPlan is null")?;
        let mut plan: *mut TfLiteIntArray = core::ptr::null_mut();
        // SAFETY: the runtime's function with its context and an out pointer.
        let status = unsafe { get(self.ctx, &mut plan) };
        if status != TfLiteStatus::kTfLiteOk || plan.is_null() {
            return Err(format!("GetExecutionPlan failed ({status:?})"));
        }
        // SAFETY: the runtime's array, valid until the next call.
        Ok(unsafe { (*plan).as_slice() }.to_vec())
    }

    /// Node `index` and its registration's code and version.
    pub fn node(&self, index: i32) -> Result<NodeView, String> {
        let get = self
            .c()
            .GetNodeAndRegistration
            .ok_or("GetNodeAndRegistration is null")?;
        let mut node: *mut TfLiteNode = core::ptr::null_mut();
        let mut reg: *mut TfLiteRegistration = core::ptr::null_mut();
        // SAFETY: the runtime's function with its context and out pointers.
        let status = unsafe { get(self.ctx, index, &mut node, &mut reg) };
        if status != TfLiteStatus::kTfLiteOk || node.is_null() || reg.is_null() {
            return Err(format!(
                "GetNodeAndRegistration({index}) failed ({status:?})"
            ));
        }
        // SAFETY: the runtime's live node and registration.
        let (node, reg) = unsafe { (&*node, &*reg) };
        if !(0..MAX_BUILTIN_CODE).contains(&reg.builtin_code) {
            return Err(format!(
                "node {index}'s registration has builtin code {}: this runtime's \
                 TfLiteRegistration does not match the delegate's (TF 2.15 … 2.21's TFLite)",
                reg.builtin_code
            ));
        }
        Ok(NodeView {
            builtin_code: reg.builtin_code,
            version: reg.version,
            // SAFETY: the node's live index arrays (null: none).
            inputs: unsafe { int_array(node.inputs) },
            // SAFETY: as above.
            outputs: unsafe { int_array(node.outputs) },
            builtin_data: node.builtin_data,
        })
    }

    /// How many tensors the context has.
    pub fn tensor_count(&self) -> usize {
        self.c().tensors_size
    }

    fn tensor_ptr(&self, index: i32) -> Result<*mut TfLiteTensor, String> {
        let c = self.c();
        match usize::try_from(index) {
            Ok(i) if i < c.tensors_size => Ok(c.tensors.wrapping_add(i)),
            _ => Err(format!(
                "tensor index {index} out of range ({} tensors)",
                c.tensors_size
            )),
        }
    }

    /// Tensor `index`.
    pub fn tensor(&self, index: i32) -> Result<TensorView, String> {
        // SAFETY: in range of the runtime's array, whose stride `new` checked.
        let t = unsafe { &*self.tensor_ptr(index)? };
        let name = if t.name.is_null() {
            String::new()
        } else {
            // SAFETY: the runtime's NUL-terminated name.
            unsafe { CStr::from_ptr(t.name) }
                .to_string_lossy()
                .into_owned()
        };
        // SAFETY: the tensor's live dims (null: unknown).
        let dims = unsafe { int_array(t.dims) };
        let (quant_channels, channels, quant_axis) = if t.quantization.r#type
            == TfLiteQuantizationType::kTfLiteAffineQuantization
            && !t.quantization.params.is_null()
        {
            // SAFETY: an affine quantization's params are the runtime's
            // TfLiteAffineQuantization.
            let affine = unsafe { &*t.quantization.params.cast::<TfLiteAffineQuantization>() };
            // SAFETY: its live zero point array (null: none).
            let zero_points = unsafe { int_array(affine.zero_point) };
            // Per-channel: one scale per index of the quantized axis. TF
            // 2.20 keeps one zero point for all of them (measured), the
            // others one each; the scale array's size decides.
            let along = usize::try_from(affine.quantized_dimension)
                .ok()
                .and_then(|a| dims.get(a))
                .and_then(|&d| usize::try_from(d).ok())
                .unwrap_or(0);
            let count = match zero_points.len() {
                // SAFETY: the runtime's scale array of this quantization.
                1 if along > 1
                    && unsafe { channel_scales(affine.scale.cast_const(), along) }.is_ok() =>
                {
                    along
                }
                n => n,
            };
            let channels = match count {
                0 | 1 => Ok(Vec::new()),
                // SAFETY: the runtime's scale array of this quantization.
                n => unsafe { channel_scales(affine.scale.cast_const(), n) }.map(|scales| {
                    let zero_point = |i: usize| zero_points.get(i).or(zero_points.first());
                    scales
                        .into_iter()
                        .enumerate()
                        .map(|(i, s)| (s, zero_point(i).copied().unwrap_or(0)))
                        .collect()
                }),
            };
            (count, channels, affine.quantized_dimension)
        } else {
            (0, Ok(Vec::new()), 0)
        };
        let dims = dims
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| format!("tensor {index} has dim {d}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TensorView {
            index,
            name,
            dtype: t.r#type,
            dims,
            bytes: t.bytes,
            constant: t.allocation_type == TfLiteAllocationType::kTfLiteMmapRo,
            dynamic: t.allocation_type == TfLiteAllocationType::kTfLiteDynamic,
            data: t.data.cast(),
            scale: t.params.scale,
            zero_point: t.params.zero_point,
            quant_channels,
            channels,
            quant_axis,
        })
    }
}

/// The `n ≥ 2` per-channel scales of a `TfLiteFloatArray`, whose layout
/// differs between runtimes: `{int size; float data[]}` up to some
/// version, `{float* data; int size; bool owning}` in the newest sources.
/// Which one this runtime has is read off the array itself: `size` must
/// be `n` at offset 0 (flexible) or at offset 8 (pointer), and not both.
/// The first 12 bytes exist in either layout for `n ≥ 2`. With the
/// flexible layout, offset 8 holds `data[1]`, a positive normal float,
/// whose bits are never a channel count; with the pointer layout, offset
/// 0 holds the low half of a heap pointer, which equals `n` only by a
/// coincidence the check then refuses as ambiguous. Every scale must be
/// finite and positive.
///
/// # Safety
/// `array` is null or the runtime's live `TfLiteFloatArray` of `n`
/// scales (the zero-point array's length).
pub unsafe fn channel_scales(
    array: *const core::ffi::c_void,
    n: usize,
) -> Result<Vec<f32>, String> {
    if array.is_null() || n < 2 {
        return Err("no per-channel scale array".into());
    }
    let base = array.cast::<u8>();
    // SAFETY: 12 bytes exist in either layout for n >= 2 (caller).
    let (at0, at8) = unsafe {
        (
            base.cast::<c_int>().read_unaligned(),
            base.add(8).cast::<c_int>().read_unaligned(),
        )
    };
    let want = c_int::try_from(n).map_err(|_| format!("{n} channels"))?;
    let data: *const f32 = match (at0 == want, at8 == want) {
        // SAFETY: the flexible layout: the floats follow `size`.
        (true, false) => unsafe { base.add(4).cast() },
        (false, true) => {
            // SAFETY: the pointer layout: `data` first.
            let p = unsafe { base.cast::<*const f32>().read_unaligned() };
            if p.is_null() || !p.is_aligned() {
                return Err("the scale array's data pointer is null or misaligned".into());
            }
            p
        }
        _ => {
            return Err(format!(
                "this runtime's TfLiteFloatArray is neither known layout (size {n} found at \
                 offset 0: {}, at offset 8: {})",
                at0 == want,
                at8 == want
            ));
        }
    };
    // SAFETY: `n` floats at `data` in the layout just identified.
    let scales: Vec<f32> = (0..n)
        .map(|i| unsafe { data.add(i).read_unaligned() })
        .collect();
    match scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        Some(bad) => Err(format!("per-channel scale {bad} read: not a scale")),
        None => Ok(scales),
    }
}

/// The byte size of a fixed-size element type (`None`: strings,
/// resources, variants, sub-byte types, unknown ones).
fn element_size(t: TfLiteType) -> Option<usize> {
    Some(match t {
        TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteBool => 1,
        TfLiteType::kTfLiteInt16
        | TfLiteType::kTfLiteUInt16
        | TfLiteType::kTfLiteFloat16
        | TfLiteType::kTfLiteBFloat16 => 2,
        TfLiteType::kTfLiteFloat32 | TfLiteType::kTfLiteInt32 | TfLiteType::kTfLiteUInt32 => 4,
        TfLiteType::kTfLiteInt64
        | TfLiteType::kTfLiteUInt64
        | TfLiteType::kTfLiteFloat64
        | TfLiteType::kTfLiteComplex64 => 8,
        TfLiteType::kTfLiteComplex128 => 16,
        _ => return None,
    })
}

/// The ints of a runtime array; empty for null.
///
/// # Safety
/// `a` is null or a live `TfLiteIntArray`.
pub unsafe fn int_array(a: *const TfLiteIntArray) -> Vec<i32> {
    if a.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    unsafe { (*a).as_slice() }.to_vec()
}

/// `context->ReportError(context, "%s", msg)`, if the context has one.
pub fn report_error(ctx: *mut TfLiteContext, msg: &str) {
    if ctx.is_null() {
        return;
    }
    // SAFETY: the runtime's live context (callers pass what the runtime gave).
    let Some(report) = (unsafe { (*ctx).ReportError }) else {
        return;
    };
    let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: a printf-style call with one `%s` and a C string.
    unsafe { report(ctx, c"%s".as_ptr(), msg.as_ptr()) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_abi::tf::layout::CStruct;

    unsafe extern "C" fn plan(_: *mut TfLiteContext, _: *mut *mut TfLiteIntArray) -> TfLiteStatus {
        TfLiteStatus::kTfLiteError
    }
    unsafe extern "C" fn node(
        _: *mut TfLiteContext,
        _: c_int,
        _: *mut *mut TfLiteNode,
        _: *mut *mut TfLiteRegistration,
    ) -> TfLiteStatus {
        TfLiteStatus::kTfLiteError
    }
    unsafe extern "C" fn replace(
        _: *mut TfLiteContext,
        _: TfLiteRegistration,
        _: *const TfLiteIntArray,
        _: *mut tensorplug_abi::tflite::TfLiteDelegate,
    ) -> TfLiteStatus {
        TfLiteStatus::kTfLiteError
    }
    unsafe extern "C" fn report(_: *mut TfLiteContext, _: *const core::ffi::c_char) {}
    unsafe extern "C" fn resize(
        _: *mut TfLiteContext,
        _: *mut TfLiteTensor,
        _: *mut TfLiteIntArray,
    ) -> TfLiteStatus {
        TfLiteStatus::kTfLiteError
    }
    unsafe extern "C" fn preview(
        _: *mut TfLiteContext,
        _: *const TfLiteIntArray,
        _: *mut *mut tensorplug_abi::tflite::TfLiteDelegateParams,
        _: *mut c_int,
    ) -> TfLiteStatus {
        TfLiteStatus::kTfLiteError
    }

    fn context(tensors: &mut [TfLiteTensor]) -> TfLiteContext {
        let mut c = TfLiteContext::zeroed();
        c.GetExecutionPlan = Some(plan);
        c.GetNodeAndRegistration = Some(node);
        c.ReplaceNodeSubsetsWithDelegateKernels = Some(replace);
        // SAFETY: only stored, never called by these tests (Rust cannot
        // define a C-variadic function on stable).
        c.ReportError = Some(unsafe {
            core::mem::transmute::<
                unsafe extern "C" fn(*mut TfLiteContext, *const core::ffi::c_char),
                unsafe extern "C" fn(*mut TfLiteContext, *const core::ffi::c_char, ...),
            >(report)
        });
        c.ResizeTensor = Some(resize);
        c.PreviewDelegatePartitioning = Some(preview);
        c.tensors = tensors.as_mut_ptr();
        c.tensors_size = tensors.len();
        c
    }

    #[test]
    fn a_context_without_a_function_we_call_is_an_unknown_runtime() {
        let mut c = context(&mut []);
        c.PreviewDelegatePartitioning = None;
        // SAFETY: a live context.
        let err = unsafe { Graph::new(&mut c) }.err().unwrap();
        assert!(err.contains("lacks PreviewDelegatePartitioning"), "{err}");
        assert!(err.contains("TF 2.15 … 2.21"), "{err}");
        // SAFETY: null is allowed.
        assert!(unsafe { Graph::new(core::ptr::null_mut()) }.is_err());
    }

    #[test]
    fn tensors_that_do_not_read_consistently_are_an_unknown_runtime() {
        let dims: [c_int; 3] = [2, 3, 4];
        let mut t = TfLiteTensor::zeroed();
        t.r#type = TfLiteType::kTfLiteFloat32;
        t.dims = dims.as_ptr().cast_mut().cast();
        t.bytes = 3 * 4 * 4;
        let mut tensors = [t, t];
        let mut c = context(&mut tensors);
        // SAFETY: a live context whose tensors outlive the graph.
        let graph = unsafe { Graph::new(&mut c) }.unwrap();
        graph.check_tensor_layout().unwrap();
        assert_eq!(graph.tensor(1).unwrap().dims, [3, 4]);
        assert!(graph.tensor(2).is_err());
        // A layout that shifts `bytes` (or the stride) reads inconsistently.
        tensors[1].bytes = 40;
        let mut c = context(&mut tensors);
        // SAFETY: as above.
        let graph = unsafe { Graph::new(&mut c) }.unwrap();
        let err = graph.check_tensor_layout().unwrap_err();
        assert!(err.contains("tensor 1 reads as"), "{err}");
    }

    #[test]
    fn per_channel_scales_in_either_layout_and_nothing_else() {
        // `{int size; float data[]}`.
        let flexible: [u32; 4] = [3, 0.5f32.to_bits(), 0.25f32.to_bits(), 2.0f32.to_bits()];
        // SAFETY: 16 readable bytes.
        let got = unsafe { channel_scales(flexible.as_ptr().cast(), 3) };
        assert_eq!(got, Ok(vec![0.5, 0.25, 2.0]));
        // `{float* data; int size; bool owning}`.
        #[repr(C)]
        struct Pointer {
            data: *const f32,
            size: c_int,
            owning: bool,
        }
        let scales = [0.5f32, 0.125];
        let pointer = Pointer {
            data: scales.as_ptr(),
            size: 2,
            owning: false,
        };
        // SAFETY: a live struct of that layout.
        let got = unsafe { channel_scales((&raw const pointer).cast(), 2) };
        assert_eq!(got, Ok(vec![0.5, 0.125]));
        assert!(!pointer.owning);
        // Neither layout (the count is nowhere), or a scale that is none.
        // SAFETY: 16 readable bytes.
        let err = unsafe { channel_scales(flexible.as_ptr().cast(), 2) }.unwrap_err();
        assert!(err.contains("neither known layout"), "{err}");
        let negative: [u32; 3] = [2, 0.5f32.to_bits(), (-1.0f32).to_bits()];
        // SAFETY: 12 readable bytes.
        let err = unsafe { channel_scales(negative.as_ptr().cast(), 2) }.unwrap_err();
        assert!(err.contains("not a scale"), "{err}");
        // SAFETY: null is allowed.
        assert!(unsafe { channel_scales(core::ptr::null(), 2) }.is_err());
    }
}
