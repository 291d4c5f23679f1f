//! Proves the checked-in C header (`abi/include/tensorplug_device_abi.h`):
//! a C program compiled against it with gcc prints `sizeof`, `_Alignof` and
//! `offsetof`/`sizeof` of every descriptor field and the value of every
//! register, opcode, status, event kind and ABI constant; the output must
//! equal what the Rust side says, line for line.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use tensorplug_abi::device::flash::{
    CONFIG_FLASH_PAGE_SIZE, CONFIG_FLASH_SECTOR_SIZE, IMAGE_MAX_PAYLOAD, IMAGE_PAYLOAD_OFFSET,
    IMAGE_SLOT_SIZE,
};
use tensorplug_abi::device::layout::{LAYOUTS, REGISTER_MAP};
use tensorplug_abi::device::{
    CompletionStatus, DEVICE_ABI_VERSION_MAJOR, DEVICE_ABI_VERSION_MINOR, DEVICE_ABI_VERSION_PATCH,
    DEVICE_ABI_VERSION_WORD, DEVICE_MAGIC, EventKind, Features, IMAGE_HEADER_SIZE, IMAGE_MAGIC,
    Opcode, RESET_KEY,
};

/// (C macro, Rust value) for the scalar constants.
fn scalar_constants() -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = vec![
        ("TPD_DEVICE_MAGIC".into(), DEVICE_MAGIC.into()),
        (
            "TPD_DEVICE_ABI_VERSION_MAJOR".into(),
            DEVICE_ABI_VERSION_MAJOR.into(),
        ),
        (
            "TPD_DEVICE_ABI_VERSION_MINOR".into(),
            DEVICE_ABI_VERSION_MINOR.into(),
        ),
        (
            "TPD_DEVICE_ABI_VERSION_PATCH".into(),
            DEVICE_ABI_VERSION_PATCH.into(),
        ),
        (
            "TPD_DEVICE_ABI_VERSION_WORD".into(),
            DEVICE_ABI_VERSION_WORD.into(),
        ),
        ("TPD_RESET_KEY".into(), RESET_KEY.into()),
        ("TPD_IMAGE_MAGIC".into(), IMAGE_MAGIC.into()),
        ("TPD_IMAGE_HEADER_SIZE".into(), IMAGE_HEADER_SIZE as u64),
        ("TPD_IMAGE_SLOT_SIZE".into(), IMAGE_SLOT_SIZE.into()),
        (
            "TPD_IMAGE_PAYLOAD_OFFSET".into(),
            IMAGE_PAYLOAD_OFFSET.into(),
        ),
        ("TPD_IMAGE_MAX_PAYLOAD".into(), IMAGE_MAX_PAYLOAD.into()),
        (
            "TPD_CONFIG_FLASH_PAGE_SIZE".into(),
            CONFIG_FLASH_PAGE_SIZE.into(),
        ),
        (
            "TPD_CONFIG_FLASH_SECTOR_SIZE".into(),
            CONFIG_FLASH_SECTOR_SIZE.into(),
        ),
        ("TPD_FEATURES_KNOWN".into(), Features::KNOWN.bits().into()),
    ];
    for r in REGISTER_MAP {
        out.push((format!("TPD_REGISTER_{}", r.name), r.register.0.into()));
    }
    for op in Opcode::ALL {
        let name = op.name().unwrap_or("?");
        out.push((format!("TPD_OPCODE_{name}"), op.0.into()));
    }
    for status in CompletionStatus::ALL {
        let name = status.name().unwrap_or("?");
        out.push((format!("TPD_COMPLETION_STATUS_{name}"), status.0.into()));
    }
    let kinds = [
        "OP_BEGIN",
        "OP_END",
        "COPY_H2D_BEGIN",
        "COPY_H2D_END",
        "COPY_D2H_BEGIN",
        "COPY_D2H_END",
        "COPY_D2D_BEGIN",
        "COPY_D2D_END",
    ];
    for (name, kind) in kinds.iter().zip(EventKind::ALL) {
        out.push((format!("TPD_EVENT_KIND_{name}"), kind.0.into()));
    }
    out.extend(catalogue_constants());
    out
}

/// The header's `TPD_OP_*` and `TPD_DTYPE_*` lines: one per catalogue op,
/// in code order, and one per element type, with their codes (the names
/// are `cargo xtask header`'s, which CI checks for staleness).
fn catalogue_constants() -> Vec<(String, u64)> {
    use tensorplug_core::accelerator::{BUILTIN, DType};
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let header = std::fs::read_to_string(include.join("tensorplug_device_abi.h")).unwrap();
    let defines = |prefix: &str| -> Vec<(String, u64)> {
        header
            .lines()
            .filter_map(|l| l.strip_prefix("#define "))
            .filter(|l| l.starts_with(prefix))
            .map(|l| {
                let (name, value) = l.split_once(' ').unwrap();
                (name.to_owned(), value.parse().unwrap())
            })
            .collect()
    };
    let ops = defines("TPD_OP_");
    let codes: Vec<u64> = ops.iter().map(|(_, v)| *v).collect();
    let want: Vec<u64> = BUILTIN.iter().map(|d| d.id.code.into()).collect();
    assert_eq!(
        codes, want,
        "the header's TPD_OP_ codes are stale: run `cargo xtask header`"
    );
    let dtypes = defines("TPD_DTYPE_");
    let want: Vec<(String, u64)> = DType::ALL
        .iter()
        .map(|d| (format!("TPD_DTYPE_{}", d.name().to_uppercase()), *d as u64))
        .collect();
    assert_eq!(dtypes, want);
    ops.into_iter().chain(dtypes).collect()
}

/// The C program and the output the Rust side expects from it.
fn program_and_expectation() -> (String, String, usize) {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include \"tensorplug_device_abi.h\"\n\
         int main(void) {\n",
    );
    let mut expected = String::new();
    let mut checks = 0;
    for s in LAYOUTS {
        let ty = format!("TPD_{}", s.name);
        let _ = writeln!(
            c,
            "  printf(\"{n} size %zu align %zu\\n\", sizeof({ty}), (size_t)_Alignof({ty}));",
            n = s.name
        );
        let _ = writeln!(expected, "{} size {} align {}", s.name, s.size, s.align);
        checks += 2;
        for f in s.fields {
            let _ = writeln!(
                c,
                "  printf(\"{n}.{f} offset %zu size %zu\\n\", offsetof({ty}, {f}), sizeof((({ty} *)0)->{f}));",
                n = s.name,
                f = f.name
            );
            let _ = writeln!(
                expected,
                "{}.{} offset {} size {}",
                s.name, f.name, f.offset, f.size
            );
            checks += 2;
        }
    }
    for (name, value) in scalar_constants() {
        let _ = writeln!(
            c,
            "  printf(\"{name} %llu\\n\", (unsigned long long)({name}));"
        );
        let _ = writeln!(expected, "{name} {value}");
        checks += 1;
    }
    c.push_str("  return 0;\n}\n");
    (c, expected, checks)
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run {cmd:?} (is gcc installed?): {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn c_header_matches_rust_layouts_and_constants() {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let dir: PathBuf =
        std::env::temp_dir().join(format!("tpd-header-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (program, expected, checks) = program_and_expectation();
    let source = dir.join("check.c");
    let binary = dir.join("check");
    std::fs::write(&source, program).unwrap();
    run(Command::new("gcc")
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Wpedantic",
            "-Werror",
            "-I",
        ])
        .arg(&include)
        .arg(&source)
        .arg("-o")
        .arg(&binary));
    let printed = run(&mut Command::new(&binary));
    let _ = std::fs::remove_dir_all(&dir);
    for (c_line, rust_line) in printed.lines().zip(expected.lines()) {
        assert_eq!(c_line, rust_line, "C header (left) vs. Rust (right)");
    }
    assert_eq!(printed.lines().count(), expected.lines().count());
    println!("C header agrees with Rust on {checks} values");
    assert!(checks > 150, "only {checks} values compared");
}

#[test]
fn c_header_compiles_as_cxx_too() {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    run(Command::new("g++")
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsyntax-only",
            "-x",
            "c++",
        ])
        .arg(include.join("tensorplug_device_abi.h")));
}
