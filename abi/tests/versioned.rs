//! Version negotiation: structs from an older (smaller) or newer (larger)
//! TensorFlow are read and written only inside their own `struct_size`.

use core::mem::offset_of;
use tensorplug_abi::tf::*;
use tensorplug_abi::tf_field;

const CANARY: u8 = 0xA5;

/// A byte buffer aligned like the structs, standing in for TF's memory.
#[repr(C, align(8))]
struct TfMemory([u8; 512]);

impl TfMemory {
    fn with_struct_size(struct_size: usize) -> Self {
        let mut mem = Self([CANARY; 512]);
        mem.0[..8].copy_from_slice(&struct_size.to_ne_bytes());
        mem
    }
    fn ptr<T>(&mut self) -> *mut T {
        self.0.as_mut_ptr().cast()
    }
}

#[test]
fn older_tf_struct_reads_and_writes_only_covered_fields() {
    // An older TF whose SP_Device ends after `device_handle`.
    let old_size = offset_of!(SP_Device, device_handle) + 8;
    let mut mem = TfMemory::with_struct_size(old_size);
    // SAFETY: the buffer holds `old_size` bytes and more.
    let mut device = unsafe { Versioned::<SP_Device>::from_raw(mem.ptr()) }.unwrap();
    assert_eq!(device.struct_size(), old_size);
    assert!(device.covers(tf_field!(SP_Device, device_handle)));
    assert!(!device.covers(tf_field!(SP_Device, hardware_name)));
    device.set(tf_field!(SP_Device, ordinal), 3).unwrap();
    device
        .set(tf_field!(SP_Device, device_handle), 0x1000 as *mut _)
        .unwrap();
    let err = device.set(tf_field!(SP_Device, pci_bus_id), c"0000:01".as_ptr());
    assert_eq!(
        err,
        Err(SizeError::NotCovered {
            struct_name: "SP_Device",
            field: "pci_bus_id",
            field_end: SP_DEVICE_STRUCT_SIZE,
            struct_size: old_size,
        })
    );
    assert_eq!(device.get(tf_field!(SP_Device, ordinal)), Some(3));
    assert_eq!(device.get(tf_field!(SP_Device, hardware_name)), None);
    let missing: Vec<_> = device.missing_fields().map(|f| f.name).collect();
    assert_eq!(missing, ["hardware_name", "device_vendor", "pci_bus_id"]);

    // Filling the whole struct writes only what the old struct has.
    let full = SP_Device {
        ordinal: 7,
        hardware_name: c"x".as_ptr(),
        ..SP_Device::new()
    };
    assert_eq!(device.write_covered(&full), 3); // ext, ordinal, device_handle
    let copy = device.read_covered();
    assert_eq!(copy.struct_size, old_size);
    assert_eq!(copy.ordinal, 7);
    assert!(
        copy.hardware_name.is_null(),
        "uncovered fields read as null"
    );
    assert!(
        mem.0[old_size..].iter().all(|&b| b == CANARY),
        "wrote past struct_size"
    );
}

#[test]
fn newer_tf_struct_keeps_its_unknown_tail() {
    // A newer TF with 16 more bytes we do not know about.
    let new_size = SP_DEVICE_STRUCT_SIZE + 16;
    let mut mem = TfMemory::with_struct_size(new_size);
    // SAFETY: the buffer holds `new_size` bytes.
    let mut device = unsafe { Versioned::<SP_Device>::from_raw(mem.ptr()) }.unwrap();
    assert_eq!(device.missing_fields().count(), 0);
    let full = SP_Device {
        ordinal: 2,
        pci_bus_id: c"0000:01:00.0".as_ptr(),
        ..SP_Device::new()
    };
    assert_eq!(device.write_covered(&full), 6);
    assert_eq!(device.get(tf_field!(SP_Device, ordinal)), Some(2));
    let copy = device.read_covered();
    assert_eq!(copy.struct_size, new_size, "TF's size is kept, not ours");
    assert_eq!(copy.pci_bus_id, full.pci_bus_id);
    assert!(mem.0[SP_DEVICE_STRUCT_SIZE..].iter().all(|&b| b == CANARY));
}

#[test]
fn params_from_older_tf_without_the_output_pointer() {
    let old_size = offset_of!(SE_CreateDeviceParams, ordinal) + 4;
    let mut mem = TfMemory::with_struct_size(old_size);
    // SAFETY: as above.
    let params = unsafe { Versioned::<SE_CreateDeviceParams>::from_raw(mem.ptr()) }.unwrap();
    assert_eq!(
        params.get(tf_field!(SE_CreateDeviceParams, ordinal)),
        Some(i32::from_ne_bytes([CANARY; 4]))
    );
    let err = params
        .require(tf_field!(SE_CreateDeviceParams, device))
        .unwrap_err();
    assert!(
        err.to_string().contains("`SE_CreateDeviceParams.device`"),
        "{err}"
    );
    assert!(err.to_string().contains("older TensorFlow"), "{err}");
}

#[test]
fn null_and_tiny_structs_are_rejected() {
    // SAFETY: null is allowed.
    let null =
        unsafe { Versioned::<SE_PlatformRegistrationParams>::from_raw(core::ptr::null_mut()) };
    assert_eq!(
        null.err(),
        Some(SizeError::Null {
            struct_name: "SE_PlatformRegistrationParams"
        })
    );
    for size in [0, 4, 7] {
        let mut mem = TfMemory::with_struct_size(size);
        // SAFETY: the buffer holds 8 bytes.
        let got = unsafe { Versioned::<TP_OptimizerRegistrationParams>::from_raw(mem.ptr()) };
        assert_eq!(
            got.err(),
            Some(SizeError::TooSmall {
                struct_name: "TP_OptimizerRegistrationParams",
                struct_size: size
            })
        );
    }
}

#[test]
fn owned_struct_with_an_oversized_struct_size_is_capped() {
    let mut platform = SP_Platform {
        struct_size: 4096,
        ..SP_Platform::new()
    };
    let mut view = Versioned::from_mut(&mut platform).unwrap();
    assert_eq!(view.struct_size(), size_of::<SP_Platform>());
    view.set(tf_field!(SP_Platform, force_memory_growth), 1)
        .unwrap();
    assert_eq!(platform.force_memory_growth, 1);
}

#[test]
fn field_handles_carry_the_c_layout() {
    let f = tf_field!(SP_Platform, r#type).layout();
    assert_eq!((f.name, f.offset, f.size), ("type", 24, 8));
}

#[test]
fn shared_read_only_views_read_covered_fields_from_several_threads() {
    // An older TF's SP_Device that every stream-executor call receives: many
    // threads read it at once through `VersionedRef`, nobody writes.
    let old_size = offset_of!(SP_Device, device_handle) + 8;
    let mut mem = TfMemory::with_struct_size(old_size);
    let base = mem.0.as_mut_ptr();
    // SAFETY: in bounds; written before the views exist.
    unsafe {
        base.add(offset_of!(SP_Device, ordinal))
            .cast::<i32>()
            .write_unaligned(5)
    };
    let ptr = mem.ptr::<SP_Device>().cast_const() as usize;
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(move || {
                // SAFETY: the buffer outlives the scope and is only read now.
                let view = unsafe { VersionedRef::from_ptr(ptr as *const SP_Device) }.unwrap();
                assert_eq!(view.struct_size(), old_size);
                assert_eq!(view.get(tf_field!(SP_Device, ordinal)), Some(5));
                assert_eq!(view.get(tf_field!(SP_Device, hardware_name)), None);
                let copy = view.read_covered();
                assert_eq!(copy.ordinal, 5);
                assert!(
                    copy.hardware_name.is_null(),
                    "uncovered fields read as null"
                );
                assert!(view.missing_fields().any(|f| f.name == "hardware_name"));
            });
        }
    });
    // SAFETY: a null pointer is refused, not read.
    let null = unsafe { VersionedRef::<SP_Device>::from_ptr(core::ptr::null()) };
    assert!(matches!(null, Err(SizeError::Null { .. })));
    assert!(
        mem.0[old_size..].iter().all(|&b| b == CANARY),
        "nothing written"
    );
}
