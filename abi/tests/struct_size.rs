//! `*_STRUCT_SIZE` has `TF_OFFSET_OF_END` meaning: the end of the named
//! last field, not `sizeof`.

use tensorplug_abi::tf::layout::CStruct;
use tensorplug_abi::tf::*;

#[test]
fn every_struct_size_constant_is_the_end_of_its_last_field() {
    let mut checked = 0;
    for s in STRUCTS {
        let Some(c) = s.struct_size else { continue };
        let last = s.fields.last().unwrap();
        assert_eq!(
            c.last_field, last.name,
            "{}: the header names the last field",
            s.name
        );
        assert_eq!(c.value, last.offset + last.size, "{}", s.name);
        assert!(c.value <= s.size, "{}", s.name);
        checked += 1;
    }
    // Every struct but TF_Buffer and TF_StringView has one.
    assert_eq!(checked, STRUCTS.len() - 2);
}

#[cfg(target_pointer_width = "64")]
#[test]
fn trailing_padding_is_not_counted() {
    assert_eq!(
        (SP_PLATFORM_STRUCT_SIZE, size_of::<SP_Platform>()),
        (35, 40)
    );
    assert_eq!(
        (
            TP_OPTIMIZER_CONFIGS_STRUCT_SIZE,
            size_of::<TP_OptimizerConfigs>()
        ),
        (92, 96)
    );
    assert_eq!(
        (
            TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE,
            size_of::<TF_AllocatorAttributes>()
        ),
        (9, 16)
    );
}

#[test]
fn constructors_set_struct_size_and_nothing_else() {
    let se = SP_StreamExecutor::new();
    assert_eq!(se.struct_size, SP_STREAMEXECUTOR_STRUCT_SIZE);
    assert!(se.allocate.is_none() && se.host_callback.is_none());
    assert_eq!(
        TP_OptimizerConfigs::default().remapping,
        TF_TriState::TF_TriState_Default
    );
    assert_eq!(TP_Profiler::LAYOUT.name, "TP_Profiler");
}

#[test]
fn enums_accept_values_tf_may_add_later() {
    let code = TSL_Code(99);
    assert_eq!(code.c_name(), None);
    assert_eq!(format!("{code:?}"), "TSL_Code(99)");
    assert_eq!(format!("{:?}", TF_INVALID_ARGUMENT), "TSL_INVALID_ARGUMENT");
    assert_eq!(TF_DataType::TF_FLOAT.c_name(), Some("TF_FLOAT"));
    assert_eq!(SE_EventStatus(3), SE_EventStatus::SE_EVENT_COMPLETE);
}

#[test]
fn api_versions_are_0_0_1() {
    for (name, value) in VERSION_CONSTS {
        let want = if name.ends_with("PATCH") { 1 } else { 0 };
        assert_eq!(*value, want, "{name}");
    }
    assert_eq!(VERSION_CONSTS.len(), 9);
}
