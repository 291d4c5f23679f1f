//! The packed operands of the window commands (`CONV2D_F32`,
//! `DEPTHWISE_CONV2D_F32`, `MAX_POOL_F32`, `AVG_POOL_F32`).

use super::command::CommandDescriptor;

/// A window command's geometry, as packed into a [`CommandDescriptor`]:
///
/// | field | bits |
/// |---|---|
/// | `m` | batch `n` |
/// | `n` | height `h` (15..0), width `w` (31..16) |
/// | `k` | channels `c` (15..0), `k` (31..16): output channels of a convolution, the multiplier of a depthwise one, 0 for pools |
/// | `len` | window height (15..0), width (31..16), output height (47..32), output width (63..48) |
/// | `imm` | stride h (3..0), stride w (7..4), dilation h (11..8), dilation w (15..12), padding top (23..16), padding left (31..24) |
///
/// The input is `[n, h, w, c]`, the output `[n, oh, ow, c·k or k or c]`.
/// Input row `oh·stride − top + i·dilation` outside `0..h` (likewise for
/// columns) is padding, so padding after the input is implied by `oh`/`ow`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WindowFields {
    /// Batch.
    pub batch: u32,
    /// Input height and width.
    pub input: [u16; 2],
    /// Input channels.
    pub channels: u16,
    /// Output channels (convolution), multiplier (depthwise), 0 (pools).
    pub k: u16,
    /// Window height and width.
    pub size: [u16; 2],
    /// Output height and width.
    pub output: [u16; 2],
    /// Row and column strides, 1 to 15.
    pub stride: [u8; 2],
    /// Row and column dilations, 1 to 15.
    pub dilation: [u8; 2],
    /// Padding rows before the input and columns before it, 0 to 255.
    pub pad: [u8; 2],
}

impl WindowFields {
    /// The largest stride or dilation the packing holds.
    pub const MAX_STEP: u8 = 15;

    /// `cmd` with the window fields set. Strides and dilations above
    /// [`MAX_STEP`](Self::MAX_STEP) do not fit: check them first.
    pub const fn pack(&self, cmd: CommandDescriptor) -> CommandDescriptor {
        CommandDescriptor {
            m: self.batch,
            n: self.input[0] as u32 | (self.input[1] as u32) << 16,
            k: self.channels as u32 | (self.k as u32) << 16,
            len: self.size[0] as u64
                | (self.size[1] as u64) << 16
                | (self.output[0] as u64) << 32
                | (self.output[1] as u64) << 48,
            imm: step(self.stride[0])
                | step(self.stride[1]) << 4
                | step(self.dilation[0]) << 8
                | step(self.dilation[1]) << 12
                | (self.pad[0] as u32) << 16
                | (self.pad[1] as u32) << 24,
            ..cmd
        }
    }

    /// The window fields of `cmd`.
    pub const fn unpack(cmd: &CommandDescriptor) -> Self {
        Self {
            batch: cmd.m,
            input: [cmd.n as u16, (cmd.n >> 16) as u16],
            channels: cmd.k as u16,
            k: (cmd.k >> 16) as u16,
            size: [cmd.len as u16, (cmd.len >> 16) as u16],
            output: [(cmd.len >> 32) as u16, (cmd.len >> 48) as u16],
            stride: [nibble(cmd.imm, 0), nibble(cmd.imm, 4)],
            dilation: [nibble(cmd.imm, 8), nibble(cmd.imm, 12)],
            pad: [(cmd.imm >> 16) as u8, (cmd.imm >> 24) as u8],
        }
    }
}

const fn step(v: u8) -> u32 {
    (v & 0xF) as u32
}

const fn nibble(word: u32, shift: u32) -> u8 {
    ((word >> shift) & 0xF) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Opcode;

    #[test]
    fn packing_round_trips_and_matches_the_documented_bits() {
        let w = WindowFields {
            batch: 2,
            input: [96, 95],
            channels: 3,
            k: 16,
            size: [3, 2],
            output: [48, 47],
            stride: [2, 15],
            dilation: [1, 3],
            pad: [0, 255],
        };
        let cmd = w.pack(CommandDescriptor::new(Opcode::CONV2D_F32, 7, 0));
        assert_eq!(WindowFields::unpack(&cmd), w);
        assert_eq!((cmd.m, cmd.n, cmd.k), (2, 95 << 16 | 96, 16 << 16 | 3));
        assert_eq!(cmd.len, 47 << 48 | 48 << 32 | 2 << 16 | 3);
        assert_eq!(cmd.imm, 0xFF00_31F2);
    }
}
