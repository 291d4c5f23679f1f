//! [`OpKind::Cast`](crate::accelerator::OpKind::Cast) on little-endian
//! bytes, as TF's CPU `Cast` converts (exact).

use super::error::{Error, check_len};
use crate::accelerator::{DType, ShapeError, cast_supported};

/// Converts the elements of `src` (of `from`) into `dst` (of `to`).
pub fn cast(from: DType, to: DType, src: &[u8], dst: &mut [u8]) -> Result<(), Error> {
    if !cast_supported(from, to) {
        return Err(Error::Shape(ShapeError::DType { operand: 0 }));
    }
    let n = src.len() / from.size();
    check_len(0, n * from.size(), src.len())?;
    check_len(1, n * to.size(), dst.len())?;
    for (s, d) in src
        .chunks_exact(from.size())
        .zip(dst.chunks_exact_mut(to.size()))
    {
        put(to, load(from, s), d);
    }
    Ok(())
}

/// One value in transit: a float, or an integer (bools are 0 or 1).
#[derive(Clone, Copy)]
enum Value {
    Float(f32),
    Int(i64),
}

fn load(from: DType, b: &[u8]) -> Value {
    let word = |n: usize| {
        let mut w = [0u8; 8];
        w[..n].copy_from_slice(&b[..n]);
        w
    };
    match from {
        DType::F32 => Value::Float(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        DType::BF16 => Value::Float(f32::from_bits(
            u32::from(u16::from_le_bytes([b[0], b[1]])) << 16,
        )),
        DType::F16 => Value::Float(half_to_f32(u16::from_le_bytes([b[0], b[1]]))),
        DType::I32 => Value::Int(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        DType::I64 => Value::Int(i64::from_le_bytes(word(8))),
        DType::I8 => Value::Int(i64::from(b[0] as i8)),
        _ => Value::Int(i64::from(b[0] != 0)),
    }
}

fn put(to: DType, v: Value, d: &mut [u8]) {
    match (to, v) {
        (DType::F32, Value::Float(x)) => d.copy_from_slice(&x.to_le_bytes()),
        (DType::BF16, Value::Float(x)) => d.copy_from_slice(&f32_to_bf16(x).to_le_bytes()),
        (DType::F16, Value::Float(x)) => d.copy_from_slice(&f32_to_half(x).to_le_bytes()),
        (DType::F32, Value::Int(i)) => d.copy_from_slice(&(i as f32).to_le_bytes()),
        (DType::Bool, Value::Float(x)) => d[0] = u8::from(x != 0.0),
        (DType::Bool, Value::Int(i)) => d[0] = u8::from(i != 0),
        (DType::I32, Value::Float(x)) => d.copy_from_slice(&truncate(x, 31).to_le_bytes()[..4]),
        (DType::I32, Value::Int(i)) => d.copy_from_slice(&(i as i32).to_le_bytes()),
        (_, Value::Float(x)) => d.copy_from_slice(&truncate(x, 63).to_le_bytes()),
        (_, Value::Int(i)) => d.copy_from_slice(&i.to_le_bytes()),
    }
}

/// `x` rounded to bfloat16, to nearest even; NaN becomes a quiet NaN of
/// its sign (Eigen's `float_to_bfloat16_rtne`, which TF uses).
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return if bits >> 31 == 1 { 0xffc0 } else { 0x7fc0 };
    }
    let lsb = (bits >> 16) & 1;
    (bits.wrapping_add(0x7fff + lsb) >> 16) as u16
}

/// `x` rounded to IEEE binary16, to nearest even: overflow to ±∞, NaN to a
/// quiet NaN, subnormal results kept (Eigen's `float_to_half_rtne`).
pub fn f32_to_half(x: f32) -> u16 {
    const F32_INF: u32 = 255 << 23;
    const F16_MAX: u32 = (127 + 16) << 23;
    const DENORM_MAGIC: u32 = ((127 - 15) + (23 - 10) + 1) << 23;
    let bits = x.to_bits();
    let sign = bits & 0x8000_0000;
    let f = bits ^ sign;
    let out = if f >= F16_MAX {
        if f > F32_INF { 0x7e00 } else { 0x7c00 }
    } else if f < 113 << 23 {
        // A subnormal or zero half: let the float adder round.
        let sum = f32::from_bits(f) + f32::from_bits(DENORM_MAGIC);
        sum.to_bits().wrapping_sub(DENORM_MAGIC)
    } else {
        let odd = (f >> 13) & 1;
        f.wrapping_add(((15u32.wrapping_sub(127)) << 23).wrapping_add(0xfff))
            .wrapping_add(odd)
            >> 13
    };
    (out | (sign >> 16)) as u16
}

/// `x` rounded to the half type `to` and back (`x` itself for another
/// type): the value TF's half kernels use for a float attribute they cast
/// to `T` (`LeakyRelu`'s `alpha`).
pub fn through_half(to: DType, x: f32) -> f32 {
    match to {
        DType::BF16 => f32::from_bits(u32::from(f32_to_bf16(x)) << 16),
        DType::F16 => half_to_f32(f32_to_half(x)),
        _ => x,
    }
}

/// IEEE binary16 to f32 (exact).
pub fn half_to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let exp = (h >> 10) & 0x1f;
    let mant = h & 0x3ff;
    let sign = (h & 0x8000) << 16;
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: m · 2⁻²⁴, normalized.
            let shift = m.leading_zeros() - 21;
            let m = (m << shift) & 0x3ff;
            sign | ((127 - 15 + 1 - shift) << 23) | (m << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// `x` toward zero as an integer of `bits + 1` bits; NaN, ±∞ and values
/// out of range give its minimum (x86's `cvttss2si`, which TF's CPU
/// kernel compiles to).
fn truncate(x: f32, bits: u32) -> i64 {
    let limit = libm::ldexpf(1.0, bits as i32);
    let min = if bits == 63 {
        i64::MIN
    } else {
        -(1i64 << bits)
    };
    if x.is_nan() || x >= limit || x < -limit {
        min
    } else {
        x as i64
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn floats_to_integers_truncate_and_saturate_to_the_minimum() {
        let src = f32s(&[
            f32::NAN,
            f32::INFINITY,
            -3e9,
            2.7,
            -2.7,
            -0.0,
            2_147_483_520.0,
        ]);
        let mut out = vec![0u8; 28];
        cast(DType::F32, DType::I32, &src, &mut out).unwrap();
        let got: Vec<i32> = out
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, [i32::MIN, i32::MIN, i32::MIN, 2, -2, 0, 2_147_483_520]);
        let mut wide = vec![0u8; 56];
        cast(DType::F32, DType::I64, &src, &mut wide).unwrap();
        assert_eq!(
            i64::from_le_bytes(wide[16..24].try_into().unwrap()),
            -3_000_000_000
        );
        assert_eq!(i64::from_le_bytes(wide[..8].try_into().unwrap()), i64::MIN);
    }

    #[test]
    fn half_types_round_to_nearest_even() {
        // 1 + 2⁻⁸ is a tie in bf16: to even (1.0); 1 + 3·2⁻⁹ rounds up.
        assert_eq!(f32_to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(f32_to_bf16(1.0 + 3.0 / 512.0), 0x3f81);
        assert_eq!(f32_to_bf16(f32::NAN), 0x7fc0);
        assert_eq!(f32_to_bf16(f32::INFINITY), 0x7f80);
        // f16: 65520 overflows, 65519 rounds to the largest half, 2⁻²⁵ is
        // a tie to 0, 3·2⁻²⁶ to the smallest subnormal.
        assert_eq!(f32_to_half(65520.0), 0x7c00);
        assert_eq!(f32_to_half(65519.0), 0x7bff);
        assert_eq!(f32_to_half(libm::ldexpf(1.0, -25)), 0);
        assert_eq!(f32_to_half(libm::ldexpf(3.0, -26)), 1);
        assert_eq!(f32_to_half(-1.5), 0xbe00);
        assert_eq!(f32_to_half(f32::NAN), 0x7e00);
        for h in [
            0u16, 1, 0x3ff, 0x400, 0x3c00, 0x7bff, 0x7c00, 0x8001, 0xfbff,
        ] {
            assert_eq!(f32_to_half(half_to_f32(h)), h, "{h:#x}");
        }
        assert_eq!(half_to_f32(1), libm::ldexpf(1.0, -24));
    }

    #[test]
    fn bools_integers_and_unsupported_pairs() {
        let mut b = [9u8; 3];
        cast(
            DType::F32,
            DType::Bool,
            &f32s(&[f32::NAN, -0.0, 2.0]),
            &mut b,
        )
        .unwrap();
        assert_eq!(b, [1, 0, 1]);
        let mut f = [0u8; 8];
        cast(DType::Bool, DType::F32, &[1, 0], &mut f).unwrap();
        assert_eq!(f, *f32s(&[1.0, 0.0]));
        let mut narrow = [0u8; 4];
        let big = (1i64 << 40) + 7;
        cast(DType::I64, DType::I32, &big.to_le_bytes(), &mut narrow).unwrap();
        assert_eq!(i32::from_le_bytes(narrow), 7);
        let mut wide = [0u8; 8];
        cast(DType::I8, DType::F32, &[0x80, 0x7f], &mut wide).unwrap();
        assert_eq!(wide, *f32s(&[-128.0, 127.0]));
        assert!(cast(DType::F32, DType::I8, &[0; 4], &mut [0u8; 1]).is_err());
    }
}
