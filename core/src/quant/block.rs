//! The quantization block: the `i32` operand every int8 op takes last.
//!
//! Eight header words, then the op's per-channel or per-op words
//! (`docs/device-numerics.md`, "The quantization block"):
//!
//! | word | meaning |
//! |---|---|
//! | 0 | the first input's zero point |
//! | 1 | the second input's zero point (`AddInt8`; else 0) |
//! | 2 | the output's zero point |
//! | 3, 4 | the output clamp `[min, max]` (the fused activation) |
//! | 5 | the rounding: 0 double, 1 single ([`Rounding`]) |
//! | 6 | `C`, the per-channel count of the words that follow |
//! | 7 | reserved, 0 |
//!
//! After the header: a convolution or `MatMulInt8` has `bias[C]`,
//! `multiplier[C]`, `shift[C]` (`C` = output channels); `AddInt8` has
//! `C` = 0 and six words (multiplier, shift) for input 0, input 1 and the
//! output; `MulInt8` has `C` = 0 and two words (the multiplier and shift of
//! `s_a · s_b / s_out`); `LookupInt8` has `C` = 0 and its 256 entries as 64 words (entry
//! `b` is byte `b % 4` of word `b / 4`, little-endian, for the input byte
//! `b`); `SoftmaxInt8` has `C` = 0 and three words (the input's
//! multiplier and left shift, `diff_min`) after a header whose output zero
//! point is −128; the pools have nothing; `Quantize` and `Dequantize` have
//! `scale[C]` as `f32` bits (`C` = 1 per tensor, or the last axis).

use super::softmax::SoftmaxQuant;
use super::{QuantError, Requantize, Rounding};

/// Words in the header.
pub const HEADER_WORDS: usize = 8;
/// Words after `AddInt8`'s header.
pub const ADD_WORDS: usize = 6;
/// Words after `SoftmaxInt8`'s header: multiplier, left shift, `diff_min`.
pub const SOFTMAX_WORDS: usize = 3;
/// Words after `LookupInt8`'s header: its 256 one-byte entries.
pub const LOOKUP_WORDS: usize = 64;
/// Words after `MulInt8`'s header: the product's multiplier and shift.
pub const MUL_WORDS: usize = 2;

/// A refused block as a device's completion `detail` (`docs/device-abi.md`,
/// "int8 commands"): bits 7..0 are 24 (`src2`'s descriptor offset), bits
/// 15..8 the reason (1 not finite, 2 negative, 3 shift, 4 zero point, 5
/// clamp, 6 rounding, 7 length, 8 channels, 9 scale, 10 reserved), bits
/// 31..16 the offending value (as `i16`, saturated).
pub const fn detail(error: QuantError) -> u32 {
    let (code, value): (u32, i32) = match error {
        QuantError::NotFinite => (1, 0),
        QuantError::Negative => (2, 0),
        QuantError::ShiftOutOfRange { shift } => (3, shift),
        QuantError::ZeroPoint { value } => (4, value),
        QuantError::Clamp { min, max } => (5, if min > max { max } else { min }),
        QuantError::Rounding { value } => (6, value),
        QuantError::BlockLength { got, .. } => (7, got as i32),
        QuantError::Channels { got, .. } => (8, got as i32),
        QuantError::Scale { channel } => (9, channel as i32),
        QuantError::Reserved => (10, 0),
    };
    let value = if value > i16::MAX as i32 {
        i16::MAX
    } else if value < i16::MIN as i32 {
        i16::MIN
    } else {
        value as i16
    };
    SRC2_OFFSET | code << 8 | (value as u16 as u32) << 16
}

/// The descriptor offset of `src2`, where the block is.
const SRC2_OFFSET: u32 = 24;

/// What a completion `detail` from [`detail`] says, for messages: the
/// reason and the value; `None` for any other detail.
pub fn describe_detail(detail: u32) -> Option<(&'static str, i16)> {
    if detail & 0xFF != SRC2_OFFSET {
        return None;
    }
    let reason = match (detail >> 8) & 0xFF {
        1 => "a multiplier that is not finite",
        2 => "a negative multiplier",
        3 => "a shift outside [-31, 30]",
        4 => "a zero point outside int8's [-128, 127]",
        5 => "an output clamp that is not a range within [-128, 127]",
        6 => "a rounding word that is neither 0 nor 1",
        7 => "a block of the wrong length (words given)",
        8 => "a per-channel count that is not the op's",
        9 => "a scale that is not a finite number > 0 (its channel)",
        10 => "a reserved word that is not 0",
        _ => return None,
    };
    Some((reason, (detail >> 16) as u16 as i16))
}

/// The header of a quantization block, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantHeader {
    /// The inputs' zero points (the second is `AddInt8`'s).
    pub zero_points: [i32; 2],
    /// The output's zero point.
    pub output_zero_point: i32,
    /// The output clamp's lower end.
    pub min: i32,
    /// Its upper end.
    pub max: i32,
    /// Which of TFLite's requantization builds.
    pub rounding: Rounding,
    /// Per-channel entries after the header.
    pub channels: u32,
}

const I8_RANGE: core::ops::RangeInclusive<i32> = -128..=127;

impl QuantHeader {
    /// The header's words.
    pub const fn words(&self) -> [i32; HEADER_WORDS] {
        [
            self.zero_points[0],
            self.zero_points[1],
            self.output_zero_point,
            self.min,
            self.max,
            self.rounding as i32,
            self.channels as i32,
            0,
        ]
    }

    /// The header of `block`, checked: every zero point and the clamp in
    /// int8's range, `min ≤ max`, a known rounding, the reserved word 0.
    pub fn parse(block: &[i32]) -> Result<Self, QuantError> {
        let w = block.get(..HEADER_WORDS).ok_or(QuantError::BlockLength {
            expected: HEADER_WORDS as u32,
            got: block.len() as u32,
        })?;
        for &value in [w[0], w[1], w[2]].iter() {
            if !I8_RANGE.contains(&value) {
                return Err(QuantError::ZeroPoint { value });
            }
        }
        let (min, max) = (w[3], w[4]);
        if !I8_RANGE.contains(&min) || !I8_RANGE.contains(&max) || min > max {
            return Err(QuantError::Clamp { min, max });
        }
        let rounding = match w[5] {
            0 => Rounding::Double,
            1 => Rounding::Single,
            value => return Err(QuantError::Rounding { value }),
        };
        if w[7] != 0 || w[6] < 0 {
            return Err(QuantError::Reserved);
        }
        Ok(Self {
            zero_points: [w[0], w[1]],
            output_zero_point: w[2],
            min,
            max,
            rounding,
            channels: w[6] as u32,
        })
    }

    /// The header, after checking that `block` holds it and exactly
    /// `channels` entries of `per_channel` words plus `extra` words.
    pub fn parse_sized(
        block: &[i32],
        channels: usize,
        per_channel: usize,
        extra: usize,
    ) -> Result<Self, QuantError> {
        let header = Self::parse(block)?;
        if header.channels as usize != channels {
            return Err(QuantError::Channels {
                expected: channels as u32,
                got: header.channels,
            });
        }
        let expected = HEADER_WORDS + channels * per_channel + extra;
        if block.len() != expected {
            return Err(QuantError::BlockLength {
                expected: expected as u32,
                got: block.len() as u32,
            });
        }
        Ok(header)
    }
}

/// A convolution's or `MatMulInt8`'s block: the header and, per output
/// channel, its bias and requantization (each checked).
#[derive(Clone, Copy, Debug)]
pub struct PerChannel<'a> {
    /// The header.
    pub header: QuantHeader,
    /// `bias[C]`.
    pub bias: &'a [i32],
    /// `multiplier[C]`.
    pub multipliers: &'a [i32],
    /// `shift[C]`.
    pub shifts: &'a [i32],
}

impl<'a> PerChannel<'a> {
    /// `block` for `channels` output channels.
    pub fn parse(block: &'a [i32], channels: usize) -> Result<Self, QuantError> {
        let header = QuantHeader::parse_sized(block, channels, 3, 0)?;
        let rest = &block[HEADER_WORDS..];
        let (bias, rest) = rest.split_at(channels);
        let (multipliers, shifts) = rest.split_at(channels);
        for (&m, &s) in multipliers.iter().zip(shifts) {
            Requantize::new(m, s)?;
        }
        Ok(Self {
            header,
            bias,
            multipliers,
            shifts,
        })
    }
}

/// `AddInt8`'s block: the header and the three requantizations.
pub fn parse_add(block: &[i32]) -> Result<(QuantHeader, [Requantize; 3]), QuantError> {
    let header = QuantHeader::parse_sized(block, 0, 0, ADD_WORDS)?;
    let w = &block[HEADER_WORDS..];
    let r = |i: usize| Requantize::new(w[2 * i], w[2 * i + 1]);
    Ok((header, [r(0)?, r(1)?, r(2)?]))
}

/// `SoftmaxInt8`'s block: its output is TFLite's, scale 1/256 and zero
/// point −128, over int8's whole range.
pub fn softmax(q: &SoftmaxQuant) -> [i32; HEADER_WORDS + SOFTMAX_WORDS] {
    let header = QuantHeader {
        zero_points: [0, 0],
        output_zero_point: -128,
        min: -128,
        max: 127,
        rounding: q.rounding,
        channels: 0,
    };
    let mut words = [0; HEADER_WORDS + SOFTMAX_WORDS];
    words[..HEADER_WORDS].copy_from_slice(&header.words());
    words[HEADER_WORDS..].copy_from_slice(&[
        q.input.multiplier,
        i32::from(q.input.shift),
        q.diff_min,
    ]);
    words
}

/// `SoftmaxInt8`'s block, checked: the output's zero point −128 and
/// clamp int8's range (the kernel assumes them), a left shift ≥ 0 and
/// `diff_min ≤ 0`.
pub fn parse_softmax(block: &[i32]) -> Result<SoftmaxQuant, QuantError> {
    let header = QuantHeader::parse_sized(block, 0, 0, SOFTMAX_WORDS)?;
    if header.output_zero_point != -128 {
        return Err(QuantError::ZeroPoint {
            value: header.output_zero_point,
        });
    }
    if (header.min, header.max) != (-128, 127) {
        return Err(QuantError::Clamp {
            min: header.min,
            max: header.max,
        });
    }
    let w = &block[HEADER_WORDS..];
    if w[1] < 0 {
        return Err(QuantError::ShiftOutOfRange { shift: w[1] });
    }
    if w[2] > 0 {
        return Err(QuantError::Reserved);
    }
    Ok(SoftmaxQuant {
        input: Requantize::new(w[0], w[1])?,
        diff_min: w[2],
        rounding: header.rounding,
    })
}

/// `MulInt8`'s block, checked: the header and the product's requantization.
pub fn parse_mul(block: &[i32]) -> Result<(QuantHeader, Requantize), QuantError> {
    let header = QuantHeader::parse_sized(block, 0, 0, MUL_WORDS)?;
    let w = &block[HEADER_WORDS..];
    Ok((header, Requantize::new(w[0], w[1])?))
}

/// `LookupInt8`'s block for `table` (entry `b` for the input whose byte is
/// `b`: `table[128]` is the output for −128).
pub fn lookup(table: &[i8; 256]) -> [i32; HEADER_WORDS + LOOKUP_WORDS] {
    let header = QuantHeader {
        zero_points: [0, 0],
        output_zero_point: 0,
        min: -128,
        max: 127,
        // A table requantizes nothing: the field is unread.
        rounding: Rounding::Double,
        channels: 0,
    };
    let mut words = [0; HEADER_WORDS + LOOKUP_WORDS];
    words[..HEADER_WORDS].copy_from_slice(&header.words());
    for (w, bytes) in words[HEADER_WORDS..].iter_mut().zip(table.chunks_exact(4)) {
        *w = i32::from_le_bytes([
            bytes[0] as u8,
            bytes[1] as u8,
            bytes[2] as u8,
            bytes[3] as u8,
        ]);
    }
    words
}

/// `LookupInt8`'s block, checked (its header as any block's): the table.
pub fn parse_lookup(block: &[i32]) -> Result<[i8; 256], QuantError> {
    QuantHeader::parse_sized(block, 0, 0, LOOKUP_WORDS)?;
    let mut table = [0i8; 256];
    for (entries, w) in table.chunks_exact_mut(4).zip(&block[HEADER_WORDS..]) {
        for (e, b) in entries.iter_mut().zip(w.to_le_bytes()) {
            *e = b as i8;
        }
    }
    Ok(table)
}

/// `Quantize`'s block (`quantize`) or `Dequantize`'s for one per-tensor
/// `scale` and `zero_point` (the int8 side's), over int8's whole range.
pub fn per_tensor_scale(quantize: bool, scale: f32, zero_point: i32) -> [i32; HEADER_WORDS + 1] {
    let (zero_points, output_zero_point) = match quantize {
        true => ([0, 0], zero_point),
        false => ([zero_point, 0], 0),
    };
    let header = QuantHeader {
        zero_points,
        output_zero_point,
        min: -128,
        max: 127,
        // Neither op requantizes: the field is unread.
        rounding: Rounding::Double,
        channels: 1,
    };
    let mut words = [0; HEADER_WORDS + 1];
    words[..HEADER_WORDS].copy_from_slice(&header.words());
    words[HEADER_WORDS] = scale.to_bits() as i32;
    words
}

/// `Quantize`'s or `Dequantize`'s block for a tensor whose last axis is
/// `last`: one scale, or one per element of that axis; each finite and > 0.
pub fn parse_scales(block: &[i32], last: usize) -> Result<(QuantHeader, &[i32]), QuantError> {
    let header = QuantHeader::parse(block)?;
    let channels = if header.channels == 1 { 1 } else { last };
    let header = QuantHeader::parse_sized(block, channels, 1, 0)?;
    let scales = &block[HEADER_WORDS..];
    for (channel, &bits) in scales.iter().enumerate() {
        let s = f32::from_bits(bits as u32);
        if !(s.is_finite() && s > 0.0) {
            return Err(QuantError::Scale {
                channel: channel as u32,
            });
        }
    }
    Ok((header, scales))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(channels: u32) -> QuantHeader {
        QuantHeader {
            zero_points: [-3, 0],
            output_zero_point: 5,
            min: -128,
            max: 127,
            rounding: Rounding::Single,
            channels,
        }
    }

    #[test]
    fn a_header_round_trips_and_bad_words_are_named() {
        let h = header(2);
        assert_eq!(QuantHeader::parse(&h.words()), Ok(h));
        let bad = |i: usize, v: i32| {
            let mut w = h.words();
            w[i] = v;
            QuantHeader::parse(&w)
        };
        assert_eq!(bad(0, 128), Err(QuantError::ZeroPoint { value: 128 }));
        assert_eq!(bad(2, -129), Err(QuantError::ZeroPoint { value: -129 }));
        assert_eq!(
            bad(4, -129),
            Err(QuantError::Clamp {
                min: -128,
                max: -129
            })
        );
        let mut w = h.words();
        (w[3], w[4]) = (9, 8);
        assert_eq!(
            QuantHeader::parse(&w),
            Err(QuantError::Clamp { min: 9, max: 8 })
        );
        assert_eq!(bad(5, 2), Err(QuantError::Rounding { value: 2 }));
        assert_eq!(bad(7, 1), Err(QuantError::Reserved));
        assert!(QuantHeader::parse(&h.words()[..7]).is_err());
    }

    #[test]
    fn per_channel_blocks_check_length_count_and_each_multiplier() {
        let mut block = h_words(2);
        block.extend_from_slice(&[7, -7, 1 << 30, 1 << 30, -1, 3]);
        let p = PerChannel::parse(&block, 2).unwrap();
        assert_eq!((p.bias, p.shifts), (&[7, -7][..], &[-1, 3][..]));
        assert_eq!(
            PerChannel::parse(&block, 3).unwrap_err(),
            QuantError::Channels {
                expected: 3,
                got: 2
            }
        );
        assert!(matches!(
            PerChannel::parse(&block[..13], 2),
            Err(QuantError::BlockLength { expected: 14, .. })
        ));
        block[12] = 40;
        assert_eq!(
            PerChannel::parse(&block, 2).unwrap_err(),
            QuantError::ShiftOutOfRange { shift: 40 }
        );
    }

    #[test]
    fn scales_must_be_positive_and_finite() {
        let mut block = h_words(1);
        block.push(0.5f32.to_bits() as i32);
        assert_eq!(parse_scales(&block, 9).unwrap().1.len(), 1);
        for bad in [0.0f32, -1.0, f32::NAN, f32::INFINITY] {
            block[HEADER_WORDS] = bad.to_bits() as i32;
            assert_eq!(
                parse_scales(&block, 9).unwrap_err(),
                QuantError::Scale { channel: 0 }
            );
        }
    }

    #[test]
    fn a_refusal_travels_as_a_completion_detail() {
        let d = detail(QuantError::ZeroPoint { value: 300 });
        assert_eq!(d & 0xFF, 24);
        assert_eq!(
            describe_detail(d),
            Some(("a zero point outside int8's [-128, 127]", 300))
        );
        let d = detail(QuantError::ShiftOutOfRange { shift: -40 });
        assert_eq!(describe_detail(d).map(|(_, v)| v), Some(-40));
        let saturated = detail(QuantError::ZeroPoint { value: 1 << 20 });
        assert_eq!(describe_detail(saturated).map(|(_, v)| v), Some(i16::MAX));
        // Another field's detail, or an unknown reason, is not a block's.
        assert_eq!(describe_detail(16), None);
        assert_eq!(describe_detail(24 | 99 << 8), None);
    }

    extern crate std;
    fn h_words(channels: u32) -> std::vec::Vec<i32> {
        header(channels).words().to_vec()
    }
}
