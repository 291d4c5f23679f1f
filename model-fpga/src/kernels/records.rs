//! The model's kernels of the catalogue's records (the `RECORD` command,
//! ABI 1.10): per record, its code, the f32 elements each operand has for
//! the command's extents and attribute bits, and its computation. A new
//! record is one entry of [`RECORDS`] and its two functions; the `OPS`
//! registers list it from here.

pub use tensorplug_core::accelerator::DeviceArgs;

/// One record's kernel.
pub struct RecordKernel {
    /// The record's catalogue code (`RECORD`'s `imm` low half).
    pub code: u16,
    /// Its operands' sizes for the command's arguments (`m`, `n`, `k` and
    /// `imm`'s high half); `None` refuses them.
    pub sizes: fn(DeviceArgs) -> Option<Sizes>,
    /// The computation on validated, disjoint operands.
    pub run: fn(DeviceArgs, Inputs<'_>, &mut [f32]),
}

/// A record's f32 elements per input (0 past its count) and output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Each input's.
    pub inputs: [u64; 3],
    /// The output's.
    pub output: u64,
}

/// A record's inputs (empty past its count).
pub type Inputs<'a> = [&'a [f32]; 3];

/// The records this model runs.
pub const RECORDS: &[RecordKernel] = &[];

/// The kernel of record `code`.
pub fn record(code: u16) -> Option<&'static RecordKernel> {
    RECORDS.iter().find(|r| r.code == code)
}
