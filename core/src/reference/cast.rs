//! [`OpKind::Cast`](crate::accelerator::OpKind::Cast) on little-endian
//! bytes, as TF's CPU `Cast` converts (exact).

use super::{Error, check_len};
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
        DType::I32 => Value::Int(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        DType::I64 => Value::Int(i64::from_le_bytes(word(8))),
        _ => Value::Int(i64::from(b[0] != 0)),
    }
}

fn put(to: DType, v: Value, d: &mut [u8]) {
    match (to, v) {
        (DType::F32, Value::Float(x)) => d.copy_from_slice(&x.to_le_bytes()),
        (DType::F32, Value::Int(i)) => d.copy_from_slice(&(i as f32).to_le_bytes()),
        (DType::Bool, Value::Float(x)) => d[0] = u8::from(x != 0.0),
        (DType::Bool, Value::Int(i)) => d[0] = u8::from(i != 0),
        (DType::I32, Value::Float(x)) => d.copy_from_slice(&truncate(x, 31).to_le_bytes()[..4]),
        (DType::I32, Value::Int(i)) => d.copy_from_slice(&(i as i32).to_le_bytes()),
        (_, Value::Float(x)) => d.copy_from_slice(&truncate(x, 63).to_le_bytes()),
        (_, Value::Int(i)) => d.copy_from_slice(&i.to_le_bytes()),
    }
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
        assert!(cast(DType::I8, DType::F32, &[1], &mut [0u8; 4]).is_err());
    }
}
