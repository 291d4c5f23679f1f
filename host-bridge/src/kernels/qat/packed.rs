//! The bytes of `QatPack`'s output: every host value the `Qat` ops of a
//! graph read from the CPU, gathered by one CPU op so they cross to the
//! device as one tensor, not one `_Send`/`_Recv` pair each (about 400 a
//! MobileNetV2 step). Layout (`docs/graph-optimizer.md`, "int8 from QAT
//! and QDQ graphs"), little-endian `u64` words:
//!
//! | words | what |
//! |---|---|
//! | 1 | `N`, the number of values |
//! | `N × 12` | per value: dtype (TF's enum), rank, byte offset, byte length, 8 dimensions |
//! | … | each value's bytes at its offset, 8-byte aligned |

/// Words in an entry.
const ENTRY: usize = 12;
/// Dimensions an entry holds.
pub(super) const MAX_RANK: usize = 8;

/// One value to pack, or one unpacked.
#[derive(Debug, PartialEq)]
pub(super) struct Value<'a> {
    pub dtype: u32,
    pub dims: Vec<u64>,
    pub bytes: &'a [u8],
}

fn word(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at * 8..at * 8 + 8)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// Each value's byte offset, and the packed length.
fn layout(values: &[Value]) -> Result<(Vec<usize>, usize), String> {
    let mut end = 8 * (1 + ENTRY * values.len());
    let mut offsets = Vec::with_capacity(values.len());
    for v in values {
        if v.dims.len() > MAX_RANK {
            return Err(format!(
                "a value of rank {} (at most {MAX_RANK})",
                v.dims.len()
            ));
        }
        offsets.push(end);
        end = (end + v.bytes.len()).next_multiple_of(8);
    }
    Ok((offsets, end))
}

/// The length of `values` packed.
pub(super) fn packed_len(values: &[Value]) -> Result<usize, String> {
    Ok(layout(values)?.1)
}

/// `values` in the layout above, into `out` of [`packed_len`] bytes.
pub(super) fn pack_into(values: &[Value], out: &mut [u8]) -> Result<(), String> {
    let (offsets, end) = layout(values)?;
    if out.len() != end {
        return Err(format!("{} bytes to pack into {}", end, out.len()));
    }
    out.fill(0);
    let mut put = |at: usize, w: u64| out[at * 8..at * 8 + 8].copy_from_slice(&w.to_le_bytes());
    put(0, values.len() as u64);
    for (i, (v, &offset)) in values.iter().zip(&offsets).enumerate() {
        let base = 1 + i * ENTRY;
        let head = [
            v.dtype.into(),
            v.dims.len() as u64,
            offset as u64,
            v.bytes.len() as u64,
        ];
        for (k, w) in head.into_iter().chain(v.dims.iter().copied()).enumerate() {
            put(base + k, w);
        }
    }
    for (v, &offset) in values.iter().zip(&offsets) {
        out[offset..offset + v.bytes.len()].copy_from_slice(v.bytes);
    }
    Ok(())
}

#[cfg(test)]
fn pack(values: &[Value]) -> Result<Vec<u8>, String> {
    let mut out = vec![0; packed_len(values)?];
    pack_into(values, &mut out)?;
    Ok(out)
}

/// Value `index` of `packed`; an error naming what is wrong for a layout
/// this module did not write.
pub(super) fn unpack(packed: &[u8], index: usize) -> Result<Value<'_>, String> {
    let bad = |what: &str| format!("packed QAT inputs: {what}");
    let count = word(packed, 0).ok_or_else(|| bad("no header"))?;
    if index as u64 >= count {
        return Err(bad(&format!("no value {index} of {count}")));
    }
    let base = 1 + index * ENTRY;
    let entry: Vec<u64> = (base..base + ENTRY)
        .map(|at| word(packed, at))
        .collect::<Option<_>>()
        .ok_or_else(|| bad("a truncated header"))?;
    let (dtype, rank, offset, len) = (entry[0], entry[1] as usize, entry[2], entry[3]);
    let bytes = usize::try_from(offset)
        .ok()
        .zip(usize::try_from(len).ok())
        .and_then(|(o, l)| packed.get(o..o.checked_add(l)?))
        .filter(|_| rank <= MAX_RANK && offset % 8 == 0)
        .ok_or_else(|| bad(&format!("value {index} lies outside the data")))?;
    Ok(Value {
        dtype: u32::try_from(dtype).map_err(|_| bad("a bad dtype"))?,
        dims: entry[4..4 + rank].to_vec(),
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_as_packed_and_aligned() {
        let (a, b) = ([1u8, 2, 3, 4, 5, 6], [9u8; 12]);
        let values = [
            Value {
                dtype: 1,
                dims: vec![],
                bytes: &a[..4],
            },
            Value {
                dtype: 1,
                dims: vec![3, 1],
                bytes: &b,
            },
            Value {
                dtype: 1,
                dims: vec![0],
                bytes: &[],
            },
        ];
        let packed = pack(&values).unwrap();
        assert_eq!(packed.len() % 8, 0);
        for (i, v) in values.iter().enumerate() {
            let got = unpack(&packed, i).unwrap();
            assert_eq!(&got, v);
            assert_eq!(
                (got.bytes.as_ptr() as usize - packed.as_ptr() as usize) % 8,
                0
            );
        }
        assert!(unpack(&packed, 3).unwrap_err().contains("no value 3 of 3"));
    }

    #[test]
    fn bad_layouts_are_errors() {
        let packed = pack(&[Value {
            dtype: 1,
            dims: vec![2],
            bytes: &[0; 8],
        }])
        .unwrap();
        assert!(unpack(&packed[..40], 0).unwrap_err().contains("truncated"));
        assert!(
            unpack(&packed[..packed.len() - 1], 0)
                .unwrap_err()
                .contains("outside")
        );
        assert!(unpack(&[], 0).is_err());
        let mut rank = packed.clone();
        rank[16] = 9;
        assert!(unpack(&rank, 0).is_err());
        let deep = Value {
            dtype: 1,
            dims: vec![1; 9],
            bytes: &[],
        };
        assert!(pack(&[deep]).is_err());
    }
}
