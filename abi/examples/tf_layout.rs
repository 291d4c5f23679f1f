//! Prints the layout of every mirrored TF C type, one fact per line, in the
//! format `cargo xtask test`'s layout check compares with gcc's view of the
//! installed headers:
//!
//! ```text
//! struct <name> <sizeof> <alignof>
//! field <struct> <field> <offsetof> <sizeof>
//! enum <name> <sizeof> <signed 0|1>
//! value <enum> <enumerator> <value>
//! const <name> <value>
//! ```
use tensorplug_abi::tf;

fn main() {
    for s in tf::STRUCTS {
        println!("struct {} {} {}", s.name, s.size, s.align);
        for f in s.fields {
            println!("field {} {} {} {}", s.name, f.name, f.offset, f.size);
        }
        if let Some(c) = s.struct_size {
            println!("const {} {}", c.name, c.value);
        }
    }
    for e in tf::ENUMS {
        println!("enum {} {} {}", e.name, e.size, u8::from(e.signed));
        for (name, value) in e.values {
            println!("value {} {} {}", e.name, name, value);
        }
    }
    for (name, value) in tf::VERSION_CONSTS {
        println!("const {name} {value}");
    }
}
