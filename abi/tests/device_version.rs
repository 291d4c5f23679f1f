//! The device-ABI compatibility rule, identity check and feature bits.

use tensorplug_abi::device::{
    AbiRequirement, AbiVersion, DEVICE_ABI_VERSION, DEVICE_ABI_VERSION_WORD, DEVICE_MAGIC,
    DRIVER_ABI_REQUIREMENT, ErrorKind, Features, IdentityError, REFERENCE_FEATURES, check_identity,
};

const NEEDS_1_3: AbiRequirement = AbiRequirement {
    major: 1,
    min_minor: 3,
};

fn v(major: u8, minor: u8, patch: u8) -> AbiVersion {
    AbiVersion::new(major, minor, patch)
}

#[test]
fn equal_version_is_compatible() {
    assert_eq!(NEEDS_1_3.check(v(1, 3, 0)), Ok(()));
}

#[test]
fn newer_minor_is_compatible() {
    assert_eq!(NEEDS_1_3.check(v(1, 4, 0)), Ok(()));
    assert_eq!(NEEDS_1_3.check(v(1, 255, 255)), Ok(()));
}

#[test]
fn older_minor_is_refused_with_both_versions() {
    let err = NEEDS_1_3.check(v(1, 2, 9)).unwrap_err();
    assert_eq!(
        err,
        IdentityError::IncompatibleAbi {
            device: v(1, 2, 9),
            required: NEEDS_1_3
        }
    );
    assert_eq!(err.kind(), ErrorKind::Incompatible);
    assert_eq!(
        err.to_string(),
        "device ABI 1.2.9 is incompatible with this driver (needs 1.x, x \u{2265} 3)"
    );
}

#[test]
fn other_major_is_refused_whatever_the_minor() {
    let err = NEEDS_1_3.check(v(2, 0, 1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "device ABI 2.0.1 is incompatible with this driver (needs 1.x, x \u{2265} 3)"
    );
    assert!(NEEDS_1_3.check(v(2, 9, 0)).is_err());
    assert!(NEEDS_1_3.check(v(0, 9, 0)).is_err());
}

#[test]
fn patch_level_never_matters() {
    for patch in [0, 1, 17, 255] {
        assert!(NEEDS_1_3.accepts(v(1, 3, patch)));
        assert!(!NEEDS_1_3.accepts(v(1, 2, patch)));
    }
}

#[test]
fn rule_matches_its_definition_for_every_version() {
    for major in 0..=3u8 {
        for minor in 0..=255u8 {
            let device = v(major, minor, 7);
            let expected = major == 1 && minor >= 3;
            assert_eq!(NEEDS_1_3.accepts(device), expected, "{device}");
            assert_eq!(NEEDS_1_3.check(device).is_ok(), expected, "{device}");
        }
    }
}

#[test]
fn this_driver_accepts_this_abi() {
    assert_eq!(DRIVER_ABI_REQUIREMENT.check(DEVICE_ABI_VERSION), Ok(()));
}

#[test]
fn version_word_round_trips_and_ignores_top_byte() {
    assert_eq!(DEVICE_ABI_VERSION.to_word(), DEVICE_ABI_VERSION_WORD);
    assert_eq!(
        AbiVersion::from_word(DEVICE_ABI_VERSION_WORD),
        DEVICE_ABI_VERSION
    );
    assert_eq!(v(2, 0, 1).to_word(), 0x0002_0001);
    assert_eq!(AbiVersion::from_word(0xAB01_0203), v(1, 2, 3));
    assert_eq!(v(1, 2, 3).to_string(), "1.2.3");
}

#[test]
fn magic_is_tpfg_in_little_endian() {
    assert_eq!(DEVICE_MAGIC, u32::from_le_bytes(*b"TPFG"));
}

#[test]
fn identity_check_refuses_wrong_magic_before_looking_at_the_version() {
    let err =
        check_identity(0xFFFF_FFFF, DEVICE_ABI_VERSION_WORD, DRIVER_ABI_REQUIREMENT).unwrap_err();
    assert_eq!(err, IdentityError::WrongMagic { found: 0xFFFF_FFFF });
    assert_eq!(err.kind(), ErrorKind::NotTensorplug);
    assert_eq!(
        err.to_string(),
        "not a tensorplug device: ID register reads 0xffffffff, expected 0x47465054"
    );
}

#[test]
fn identity_check_returns_the_device_version_or_the_rule_error() {
    assert_eq!(
        check_identity(DEVICE_MAGIC, 0x0001_0402, DRIVER_ABI_REQUIREMENT),
        Ok(v(1, 4, 2))
    );
    assert_eq!(
        check_identity(DEVICE_MAGIC, 0x0002_0000, DRIVER_ABI_REQUIREMENT),
        Err(IdentityError::IncompatibleAbi {
            device: v(2, 0, 0),
            required: DRIVER_ABI_REQUIREMENT
        })
    );
}

#[test]
fn feature_bits_are_distinct_and_known_masks_unknown_bits() {
    let all = [
        Features::DMA,
        Features::EVENT_RING,
        Features::IRQ,
        Features::CONFIG_FLASH,
        Features::GEMM,
        Features::ELEMENTWISE,
        Features::ROW_REDUCTIONS,
        Features::MATH,
        Features::WINDOW,
        Features::WINDOW_GRAD,
        Features::LAYOUT,
        Features::TRANSCENDENTAL,
        Features::CATALOGUE,
        Features::INT8,
        Features::REDUCTIONS,
        Features::INDEX,
        Features::TYPES,
        Features::RANDOM,
        Features::INT8_ACTIVATIONS,
        Features::INT8_MUL,
        Features::CONCAT,
        Features::RECORDS,
    ];
    let mut union = Features::default();
    for f in all {
        assert_eq!(f.bits().count_ones(), 1);
        assert!(!union.contains(f), "{f:?} overlaps another bit");
        union = union.union(f);
    }
    assert_eq!(union, Features::KNOWN);
    assert_eq!(REFERENCE_FEATURES, Features::KNOWN);
    assert_eq!(Features(0xFFFF_FFFF).known(), Features::KNOWN);
    assert!(!Features::GEMM.contains(Features::GEMM.union(Features::DMA)));
}

#[test]
fn reset_key_is_rset_in_little_endian() {
    assert_eq!(
        tensorplug_abi::device::RESET_KEY,
        u32::from_le_bytes(*b"RSET")
    );
}
