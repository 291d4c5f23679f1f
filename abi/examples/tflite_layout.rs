//! Prints the layout of every mirrored TFLite C type in the format of
//! `tf_layout` (one fact per line), for a comparison with a gcc probe of
//! a runtime's `common.h` (`docs/delegate.md`, "Layout").
use tensorplug_abi::tflite;

fn main() {
    for s in tflite::STRUCTS {
        println!("struct {} {} {}", s.name, s.size, s.align);
        for f in s.fields {
            println!("field {} {} {} {}", s.name, f.name, f.offset, f.size);
        }
    }
    for e in tflite::ENUMS {
        println!("enum {} {} {}", e.name, e.size, u8::from(e.signed));
        for (name, value) in e.values {
            println!("value {} {} {}", e.name, name, value);
        }
    }
}
