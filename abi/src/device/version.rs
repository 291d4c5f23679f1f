//! Identity, ABI version, feature bits and the compatibility rule.

use core::fmt;

/// Value of [`Register::ID`](super::Register::ID): the bytes `"TPFG"` read as
/// a little-endian `u32`. Anything else means "not a tensorplug FPGA".
pub const DEVICE_MAGIC: u32 = 0x4746_5054;

/// Major version of the device ABI described by this module.
pub const DEVICE_ABI_VERSION_MAJOR: u8 = 1;
/// Minor version: bumped for backwards-compatible additions.
pub const DEVICE_ABI_VERSION_MINOR: u8 = 10;
/// Patch version: bumped for fixes that change no layout or meaning.
pub const DEVICE_ABI_VERSION_PATCH: u8 = 0;
/// [`DEVICE_ABI_VERSION`] as the [`Register::ABI_VERSION`](super::Register::ABI_VERSION)
/// word: `major << 16 | minor << 8 | patch`, bits 31..24 zero.
pub const DEVICE_ABI_VERSION_WORD: u32 = 0x0001_0A00;

/// A device ABI version, `major.minor.patch`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AbiVersion {
    /// Incompatible changes.
    pub major: u8,
    /// Backwards-compatible additions.
    pub minor: u8,
    /// Fixes only.
    pub patch: u8,
}

/// The device ABI version this module describes.
pub const DEVICE_ABI_VERSION: AbiVersion = AbiVersion {
    major: DEVICE_ABI_VERSION_MAJOR,
    minor: DEVICE_ABI_VERSION_MINOR,
    patch: DEVICE_ABI_VERSION_PATCH,
};

impl AbiVersion {
    /// Builds a version.
    pub const fn new(major: u8, minor: u8, patch: u8) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Decodes the `ABI_VERSION` register. Bits 31..24 are ignored.
    pub const fn from_word(word: u32) -> Self {
        let [patch, minor, major, _] = word.to_le_bytes();
        Self::new(major, minor, patch)
    }

    /// Encodes as the `ABI_VERSION` register word.
    pub const fn to_word(self) -> u32 {
        u32::from_le_bytes([self.patch, self.minor, self.major, 0])
    }
}

impl fmt::Display for AbiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// What a driver needs from a device: this major, and at least this minor.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AbiRequirement {
    /// The only major version the driver speaks.
    pub major: u8,
    /// The oldest minor version that has everything the driver uses.
    pub min_minor: u8,
}

/// What a driver written against this module needs (ABI 1.0 or newer 1.x).
pub const DRIVER_ABI_REQUIREMENT: AbiRequirement = AbiRequirement {
    major: DEVICE_ABI_VERSION_MAJOR,
    min_minor: 0,
};

impl AbiRequirement {
    /// The compatibility rule: same major, and the device's minor is at
    /// least `min_minor`. The patch level never matters.
    pub const fn accepts(self, device: AbiVersion) -> bool {
        device.major == self.major && device.minor >= self.min_minor
    }

    /// [`accepts`](Self::accepts), as a `Result` whose error names both sides.
    pub const fn check(self, device: AbiVersion) -> Result<(), IdentityError> {
        if self.accepts(device) {
            Ok(())
        } else {
            Err(IdentityError::IncompatibleAbi {
                device,
                required: self,
            })
        }
    }
}

/// Checks the `ID` and `ABI_VERSION` register words of a device against what
/// a driver requires: the first check a driver makes after reset.
pub const fn check_identity(
    id_word: u32,
    abi_version_word: u32,
    required: AbiRequirement,
) -> Result<AbiVersion, IdentityError> {
    if id_word != DEVICE_MAGIC {
        return Err(IdentityError::WrongMagic { found: id_word });
    }
    let device = AbiVersion::from_word(abi_version_word);
    match required.check(device) {
        Ok(()) => Ok(device),
        Err(e) => Err(e),
    }
}

/// Why a device (or a bitstream image) is not one this driver can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum IdentityError {
    /// The `ID` register (or image magic) is not [`DEVICE_MAGIC`].
    WrongMagic {
        /// The word that was read.
        found: u32,
    },
    /// The device ABI fails the compatibility rule.
    IncompatibleAbi {
        /// The device's (or image's) ABI version.
        device: AbiVersion,
        /// What the driver needs.
        required: AbiRequirement,
    },
}

/// Coarse classification of device-ABI errors (the embedded-hal pattern).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    /// The other side is not a tensorplug device (or image) at all.
    NotTensorplug,
    /// A tensorplug device or image, but of an incompatible ABI.
    Incompatible,
    /// Storage that was never written (erased flash).
    Empty,
    /// Data that fails an integrity check (CRC, size, format).
    Corrupt,
}

impl IdentityError {
    /// The coarse kind of this error.
    pub const fn kind(&self) -> ErrorKind {
        match self {
            Self::WrongMagic { .. } => ErrorKind::NotTensorplug,
            Self::IncompatibleAbi { .. } => ErrorKind::Incompatible,
        }
    }
}

impl fmt::Display for IdentityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WrongMagic { found } => write!(
                f,
                "not a tensorplug device: ID register reads {found:#010x}, expected {DEVICE_MAGIC:#010x}"
            ),
            Self::IncompatibleAbi { device, required } => write!(
                f,
                "device ABI {device} is incompatible with this driver (needs {}.x, x \u{2265} {})",
                required.major, required.min_minor
            ),
        }
    }
}

impl core::error::Error for IdentityError {}

/// Optional capabilities, as read from [`Register::FEATURES`](super::Register::FEATURES).
/// Unknown bits are kept: a newer minor version may set them.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Features(pub u32);

impl Features {
    /// The device can bus-master: `COPY_H2D`/`COPY_D2H` and rings in host memory.
    pub const DMA: Features = Features(1 << 0);
    /// The device stamps profiling events into the event ring.
    pub const EVENT_RING: Features = Features(1 << 1);
    /// The device raises an interrupt line (see `IRQ_STATUS`/`IRQ_ENABLE`).
    pub const IRQ: Features = Features(1 << 2);
    /// A configuration flash holds the bitstream image (see `image`).
    pub const CONFIG_FLASH: Features = Features(1 << 3);
    /// `GEMM_F32`, `GEMM_BIAS_RELU_F32` and `GEMM_BIAS_F32`.
    pub const GEMM: Features = Features(1 << 4);
    /// `ADD_F32`, `SUB_F32`, `MUL_F32`, `MAX_F32`, `RELU_F32`, `BIAS_ADD_F32`.
    pub const ELEMENTWISE: Features = Features(1 << 5);
    /// `SOFTMAX_F32` and `REDUCE_SUM_F32`.
    pub const ROW_REDUCTIONS: Features = Features(1 << 6);
    /// ABI 1.1: `DIV_F32`, `DIV_NO_NAN_F32`, `POW_F32`, `RELU_GRAD_F32`,
    /// `SQRT_F32`, `RSQRT_F32`, `RELU6_F32`, `SIGMOID_F32`, `TANH_F32` and
    /// `LOG_SOFTMAX_F32`.
    pub const MATH: Features = Features(1 << 7);
    /// ABI 1.1: `CONV2D_F32`, `DEPTHWISE_CONV2D_F32`, `MAX_POOL_F32`,
    /// `AVG_POOL_F32` (sliding windows over NHWC tensors).
    pub const WINDOW: Features = Features(1 << 8);
    /// ABI 1.1: `CONV2D_BACKPROP_INPUT_F32`, `CONV2D_BACKPROP_FILTER_F32`,
    /// `MAX_POOL_GRAD_F32` and `AVG_POOL_GRAD_F32` (training the window ops).
    pub const WINDOW_GRAD: Features = Features(1 << 9);
    /// ABI 1.1: `TRANSPOSE_F32` (a permutation of up to four axes).
    pub const LAYOUT: Features = Features(1 << 10);
    /// ABI 1.2: `EXP_F32`.
    pub const TRANSCENDENTAL: Features = Features(1 << 11);
    /// ABI 1.3: `UNARY` and `BINARY`, which name their op by its catalogue
    /// code, and the `OPS` registers, which list the codes they accept.
    pub const CATALOGUE: Features = Features(1 << 12);
    /// ABI 1.4: the int8 commands `CONV2D_I8` … `DEQUANTIZE_I8` (TFLite's
    /// int8 kernels, bit for bit; `docs/device-numerics.md`).
    pub const INT8: Features = Features(1 << 13);
    /// ABI 1.5: `REDUCE_MAX_F32`, `REDUCE_MIN_F32`, `REDUCE_PROD_F32`,
    /// `ARG_MAX_F32`, `ARG_MIN_F32`.
    pub const REDUCTIONS: Features = Features(1 << 14);
    /// ABI 1.5: `GATHER` and `SEGMENT_SUM` (int32 indices: embeddings and
    /// their gradients).
    pub const INDEX: Features = Features(1 << 15);
    /// ABI 1.5: `CAST` and `SELECT` (element types besides f32: i32, i64
    /// and bool).
    pub const TYPES: Features = Features(1 << 16);
    /// ABI 1.5: `RANDOM_UNIFORM_F32` (TF's stateless Philox floats).
    pub const RANDOM: Features = Features(1 << 17);
    /// ABI 1.6: `SOFTMAX_I8` and `LOOKUP_I8` (int8 activations: TFLite's
    /// `SOFTMAX` bit for bit, and any op of one int8 input by its table).
    pub const INT8_ACTIVATIONS: Features = Features(1 << 18);
    /// ABI 1.6: `MUL_I8` (TFLite's int8 `MUL`, the second operand
    /// broadcast along the first's leading axes).
    pub const INT8_MUL: Features = Features(1 << 19);
    /// ABI 1.7: `CONCAT` (two tensors side by side along their rows, f32
    /// or int8).
    pub const CONCAT: Features = Features(1 << 20);
    /// ABI 1.10: `RECORD` (the catalogue's ops declared as records, each
    /// by its code, which the `OPS` registers list).
    pub const RECORDS: Features = Features(1 << 21);
    /// Every bit this ABI version defines.
    pub const KNOWN: Features = Features(0x3f_ffff);

    /// The raw register word.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// True if every bit of `other` is set in `self`.
    pub const fn contains(self, other: Features) -> bool {
        self.0 & other.0 == other.0
    }

    /// `self` and `other` together.
    pub const fn union(self, other: Features) -> Features {
        Features(self.0 | other.0)
    }

    /// Only the bits this ABI version defines.
    pub const fn known(self) -> Features {
        Features(self.0 & Self::KNOWN.0)
    }
}

/// What the reference FPGA implements: every feature of ABI 1.10 (1.8 adds
/// no bit: `UNARY` ops with a parameter, which the `OPS` registers list;
/// 1.9 neither: `ADD_I8`'s broadcast `n`, known by the version).
pub const REFERENCE_FEATURES: Features = Features(0x3f_ffff);

/// Ticks per second of the reference FPGA's timestamp counter (100 MHz).
/// A device reports its own in [`Register::TIMESTAMP_FREQ_HZ`](super::Register::TIMESTAMP_FREQ_HZ).
pub const REFERENCE_TIMESTAMP_FREQ_HZ: u32 = 100_000_000;
