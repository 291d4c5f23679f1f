//! Additions the device does not do, done on the host as TF's CPU kernel
//! does: both addends read back, added, the sum written (list elements of
//! f64, integers and half types in a variant `AddN`; the int64 `Add` of
//! TF's collectives).

use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Tensor;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{DType, Shape};
use tensorplug_core::reference::cast::{f32_to_bf16, f32_to_half, half_to_f32};

/// The element viewed as bytes.
pub(super) fn bytes_of(tensor: &Tensor) -> KernelResult<Shape> {
    Shape::new(&[tensor.byte_size() as u64]).ok_or_else(|| Failure::invalid("bad shape"))
}

/// `out = a + b` on the host for an element type the device does not add:
/// as TF's CPU kernel (integers wrap; half types add in float32, rounded
/// to nearest even).
pub(super) fn add_on_host(
    run: &mut Launcher<'_>,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
) -> KernelResult<()> {
    let dtype = a.dtype();
    let size = match dtype {
        TF_DataType::TF_DOUBLE | TF_DataType::TF_INT64 => 8,
        TF_DataType::TF_INT32 => 4,
        TF_DataType::TF_BFLOAT16 | TF_DataType::TF_HALF => 2,
        other => {
            return Err(Failure::unimplemented(format!(
                "adding {other:?} on the host for this device"
            )));
        }
    };
    let bytes = bytes_of(a)?;
    let mut x = vec![0u8; a.byte_size()];
    let mut y = vec![0u8; b.byte_size()];
    run.read(run.typed_desc(a, bytes, DType::I8)?, &mut x)?;
    run.read(run.typed_desc(b, bytes, DType::I8)?, &mut y)?;
    for (x, y) in x.chunks_exact_mut(size).zip(y.chunks_exact(size)) {
        add_one(dtype, x, y);
    }
    run.write(run.typed_desc(out, bytes, DType::I8)?, &x)
}

/// `x += y` for one element of `dtype` (native byte order).
fn add_one(dtype: TF_DataType, x: &mut [u8], y: &[u8]) {
    macro_rules! add {
        ($t:ty, $op:expr) => {{
            let a = <$t>::from_ne_bytes(x.try_into().unwrap_or_default());
            let b = <$t>::from_ne_bytes(y.try_into().unwrap_or_default());
            #[allow(clippy::redundant_closure_call)]
            x.copy_from_slice(&($op)(a, b).to_ne_bytes());
        }};
    }
    let bf16 = |h: u16| f32::from_bits(u32::from(h) << 16);
    match dtype {
        TF_DataType::TF_DOUBLE => add!(f64, |a: f64, b: f64| a + b),
        TF_DataType::TF_INT64 => add!(i64, i64::wrapping_add),
        TF_DataType::TF_INT32 => add!(i32, i32::wrapping_add),
        TF_DataType::TF_BFLOAT16 => add!(u16, |a, b| f32_to_bf16(bf16(a) + bf16(b))),
        TF_DataType::TF_HALF => add!(u16, |a, b| f32_to_half(half_to_f32(a) + half_to_f32(b))),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn added(dtype: TF_DataType, x: &[u8], y: &[u8]) -> Vec<u8> {
        let mut x = x.to_vec();
        add_one(dtype, &mut x, y);
        x
    }

    #[test]
    fn host_elements_add_as_tf_cpu_does() {
        let f = |v: f64| v.to_ne_bytes();
        assert_eq!(added(TF_DataType::TF_DOUBLE, &f(1.5), &f(2.25)), f(3.75));
        let i = |v: i32| v.to_ne_bytes();
        assert_eq!(
            added(TF_DataType::TF_INT32, &i(i32::MAX), &i(1)),
            i(i32::MIN)
        );
        // bfloat16 1 + 2^-8 is a tie, rounded to even (1).
        let h = |v: u16| v.to_ne_bytes();
        assert_eq!(
            added(TF_DataType::TF_BFLOAT16, &h(0x3f80), &h(0x3b80)),
            h(0x3f80)
        );
        // bfloat16 1.0078125 (odd last bit) + 2^-8 rounds up to even.
        assert_eq!(
            added(TF_DataType::TF_BFLOAT16, &h(0x3f81), &h(0x3b80)),
            h(0x3f82)
        );
        // float16 1 + 1 = 2.
        assert_eq!(
            added(TF_DataType::TF_HALF, &h(0x3c00), &h(0x3c00)),
            h(0x4000)
        );
    }
}
