//! A serialized `KernelDef` for `TF_RegisterKernelBuilderWithKernelDef`:
//! the only way the C API registers a kernel with an integer attribute
//! constraint (`TF_KernelBuilder` has type constraints only).
//!
//! TF reads the buffer as a C string (`ParsePartialFromString(const char*)`,
//! `tensorflow/c/kernels.cc`), so it must hold no NUL byte. Every field here
//! is non-empty and every varint non-zero, except an allowed integer 0:
//! that is written as the ten-byte varint of 2^64, whose bit 64 protobuf's
//! parser drops, so it reads 0.

use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// An `int64` value with no NUL byte (0: see the module doc).
fn int_value(out: &mut Vec<u8>, v: i64) {
    if v == 0 {
        out.extend_from_slice(&[0x80; 9]);
        out.push(0x02);
    } else {
        varint(out, v as u64);
    }
}

fn field(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    varint(out, u64::from(number << 3 | 2));
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// One `AttrConstraint` whose `allowed_values.list` is `list` (encoded).
fn constraint(name: &CStr, list: &[u8]) -> Vec<u8> {
    let mut attr_value = Vec::new();
    field(&mut attr_value, 1, list); // AttrValue.list
    let mut out = Vec::new();
    field(&mut out, 1, name.to_bytes()); // name
    field(&mut out, 2, &attr_value); // allowed_values
    out
}

/// What one registration constrains.
pub struct Constraints<'a> {
    pub op: &'a CStr,
    pub device: &'a CStr,
    pub types: &'a [(&'a CStr, TF_DataType)],
    pub ints: &'a [(&'a CStr, i64)],
    pub host_memory: &'a [&'a CStr],
}

impl Constraints<'_> {
    /// The serialized `KernelDef`, NUL-terminated (`None`: it would hold a
    /// NUL byte, which TF cannot read).
    pub fn encode(&self) -> Option<std::ffi::CString> {
        let mut out = Vec::new();
        field(&mut out, 1, self.op.to_bytes()); // op
        field(&mut out, 2, self.device.to_bytes()); // device_type
        for &(attr, dtype) in self.types {
            let mut list = vec![6 << 3]; // ListValue.type, one varint
            varint(&mut list, u64::from(dtype.0));
            field(&mut out, 3, &constraint(attr, &list));
        }
        for &(attr, value) in self.ints {
            let mut list = vec![3 << 3]; // ListValue.i, one varint
            int_value(&mut list, value);
            field(&mut out, 3, &constraint(attr, &list));
        }
        for arg in self.host_memory {
            field(&mut out, 4, arg.to_bytes()); // host_memory_arg
        }
        std::ffi::CString::new(out).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_constraint_has_no_nul_byte_and_reads_as_zero_mod_2_64() {
        let def = Constraints {
            op: c"GatherV2",
            device: c"FPGA",
            types: &[(c"Tparams", TF_DataType::TF_FLOAT)],
            ints: &[(c"batch_dims", 0)],
            host_memory: &[c"axis"],
        };
        let bytes = def.encode().expect("no NUL");
        let bytes = bytes.as_bytes();
        assert!(bytes.starts_with(b"\x0a\x08GatherV2\x12\x04FPGA"));
        // The 0: ten bytes whose low 64 bits are all zero.
        let ten = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02];
        let at = bytes.windows(10).position(|w| w == ten).expect("the zero");
        let value = ten
            .iter()
            .enumerate()
            .fold(0u128, |v, (i, b)| v | (u128::from(b & 0x7f) << (7 * i)));
        assert_eq!(value as u64, 0);
        assert_eq!(bytes[at - 1], 3 << 3, "ListValue.i");
        assert!(bytes.ends_with(b"\x22\x04axis"));
    }

    #[test]
    fn other_values_are_plain_varints() {
        let mut out = Vec::new();
        int_value(&mut out, 128);
        assert_eq!(out, [0x80, 0x01]);
        out.clear();
        int_value(&mut out, -1);
        assert_eq!(out.len(), 10);
        assert!(!out.contains(&0));
    }
}
