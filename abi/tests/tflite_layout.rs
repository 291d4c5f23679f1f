//! The TFLite mirrors' field tables: in declaration order, inside the
//! struct, not overlapping; the registration versions are prefixes of one
//! another (the runtime relies on that to read an older one).

use tensorplug_abi::tflite::*;

#[test]
fn field_tables_are_ordered_and_inside_their_struct() {
    for s in STRUCTS {
        let mut end = 0;
        for f in s.fields {
            assert!(f.offset >= end, "{}.{} overlaps", s.name, f.name);
            assert!(f.end() <= s.size, "{}.{} past the end", s.name, f.name);
            end = f.end();
        }
    }
}

#[test]
fn registration_versions_are_prefixes() {
    let full = <TfLiteRegistration as tensorplug_abi::tf::layout::CStruct>::LAYOUT;
    use tensorplug_abi::tf::layout::CStruct;
    for older in [
        TfLiteRegistration_V3::LAYOUT,
        TfLiteRegistration_V2::LAYOUT,
        TfLiteRegistration_V1::LAYOUT,
    ] {
        assert_eq!(
            older.fields,
            &full.fields[..older.fields.len()],
            "{}",
            older.name
        );
        // The first field the older one lacks starts at or after its end.
        let next = full.fields[older.fields.len()];
        assert!(next.offset >= older.size, "{}", older.name);
    }
}

#[test]
fn builtin_names() {
    assert_eq!(
        builtin_name(kTfLiteBuiltinFullyConnected),
        Some("FULLY_CONNECTED")
    );
    assert_eq!(builtin_name(kTfLiteBuiltinDelegate), Some("DELEGATE"));
    assert_eq!(builtin_name(9999), None);
}
