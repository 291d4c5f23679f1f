//! The layout check: the `abi` crate's TF mirrors against the installed
//! TensorFlow headers, field for field.
//!
//! The C side enumerates structs, fields, enums and constants from the
//! headers themselves (`gcc -E` and `gcc -dM -E`), generates a C program that
//! prints `sizeof`/`alignof`/`offsetof` of each, compiles and runs it. The Rust
//! side is `abi`'s `tf_layout` example, which prints the same facts from its
//! field tables. Both print one fact per line in the same format.

use crate::setup;
use crate::util::{cargo, output, root};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Headers whose every struct and enum definition is mirrored.
const MIRRORED_HEADERS: &[&str] = &[
    "tensorflow/c/experimental/stream_executor/stream_executor.h",
    "tensorflow/c/experimental/grappler/grappler.h",
    "tensorflow/c/experimental/pluggable_profiler/pluggable_profiler.h",
    "tensorflow/c/tf_buffer.h",
    "tensorflow/c/tf_datatype.h",
    "tensorflow/c/tf_tensor.h",
    "tensorflow/c/kernels.h",
    // `xla/tsl/c/` from TF 2.17, `tsl/c/` before (the same definitions).
    "tsl/c/tsl_status.h",
];

/// Single definitions mirrored from headers that are not mirrored whole.
const MIRRORED_SINGLE: &[(&str, &str)] = &[("tensorflow/c/c_api.h", "TF_StringView")];

/// Headers the C probe includes (they pull in all of the above).
const PROBE_INCLUDES: &[&str] = &[
    "tensorflow/c/experimental/stream_executor/stream_executor.h",
    "tensorflow/c/experimental/grappler/grappler.h",
    "tensorflow/c/experimental/pluggable_profiler/pluggable_profiler.h",
    "tensorflow/c/kernels.h",
    "tensorflow/c/tf_tensor.h",
];

/// Runs the whole check against the TF of `python` (the newest TF venv
/// when `None`); fails loudly when the venv is missing. `newest`: the abi
/// must carry exactly the headers' enumerators (an older TF's headers may
/// lack enumerators abi has, e.g. dtypes added later).
pub fn run(python: Option<&Path>, newest: bool) -> Result<()> {
    let python = match python {
        Some(python) => python.to_path_buf(),
        None => {
            let python = root().join("target/venv/bin/python");
            if !python.exists() {
                bail!(
                    "the layout check needs the TensorFlow venv at {}; run `cargo xtask test` \
                     without --no-setup once to create it",
                    python.display()
                );
            }
            python
        }
    };
    let include = setup::tf_include_dir(&python)?;
    let version = setup::tf_version(&python)?;
    let work = root().join(format!("target/xtask-layout/{version}"));
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let c = c_facts(&include, &work)?;
    let rust = parse_facts(&output(cargo().args([
        "run",
        "--quiet",
        "--package",
        "tensorplug-abi",
        "--example",
        "tf_layout",
    ]))?)?;
    let (counts, mismatches, newer) = compare(&c, &rust, !newest);
    if !mismatches.is_empty() {
        bail!(
            "abi's TF mirrors differ from the TF {version} headers in {}:\n  {}",
            include.display(),
            mismatches.join("\n  ")
        );
    }
    eprintln!(
        "    TF {version}: compared {} structs, {} fields, {} enums, {} enumerators, {} \
         constants: all equal",
        counts.structs, counts.fields, counts.enums, counts.values, counts.consts
    );
    if !newer.is_empty() {
        eprintln!(
            "    abi also has enumerators TF {version} lacks (added later): {}",
            newer.join(", ")
        );
    }
    Ok(())
}

/// What one side says about every type.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Facts {
    pub structs: BTreeMap<String, StructFacts>,
    pub enums: BTreeMap<String, EnumFacts>,
    pub consts: BTreeMap<String, i64>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct StructFacts {
    pub size: u64,
    pub align: u64,
    /// (name, offset, size) in declaration order.
    pub fields: Vec<(String, u64, u64)>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct EnumFacts {
    pub size: u64,
    pub signed: bool,
    pub values: Vec<(String, i64)>,
}

/// Parses the one-fact-per-line format (see `abi/examples/tf_layout.rs`).
pub fn parse_facts(text: &str) -> Result<Facts> {
    let mut facts = Facts::default();
    for (number, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> Result<i64> {
            let word = words.get(i).context("missing number")?;
            word.parse::<i64>()
                .with_context(|| format!("bad number {word:?}"))
        };
        let unum = |i: usize| -> Result<u64> { Ok(u64::try_from(num(i)?)?) };
        let name =
            |i: usize| -> Result<String> { Ok(words.get(i).context("missing name")?.to_string()) };
        let parsed: Result<()> = (|| {
            match words.first().copied() {
                Some("struct") => {
                    let s = facts.structs.entry(name(1)?).or_default();
                    (s.size, s.align) = (unum(2)?, unum(3)?);
                }
                Some("field") => facts.structs.entry(name(1)?).or_default().fields.push((
                    name(2)?,
                    unum(3)?,
                    unum(4)?,
                )),
                Some("enum") => {
                    let e = facts.enums.entry(name(1)?).or_default();
                    (e.size, e.signed) = (unum(2)?, num(3)? != 0);
                }
                Some("value") => {
                    let value = (name(2)?, num(3)?);
                    facts.enums.entry(name(1)?).or_default().values.push(value);
                }
                Some("const") => {
                    facts.consts.insert(name(1)?, num(2)?);
                }
                None => {}
                Some(other) => bail!("unknown record {other:?}"),
            }
            Ok(())
        })();
        parsed.with_context(|| format!("line {}: {line:?}", number + 1))?;
    }
    Ok(facts)
}

/// How much was compared.
#[derive(Debug, Default, PartialEq)]
pub struct Counts {
    pub structs: usize,
    pub fields: usize,
    pub enums: usize,
    pub values: usize,
    pub consts: usize,
}

/// Compares the C truth with the Rust mirror; every difference is one line
/// naming the type, the member and both values. With `allow_newer`, abi may
/// carry enumerators the headers lack (an older TF), which are returned.
pub fn compare(c: &Facts, rust: &Facts, allow_newer: bool) -> (Counts, Vec<String>, Vec<String>) {
    let mut counts = Counts::default();
    let mut bad = Vec::new();
    let mut newer = Vec::new();
    for (name, cs) in &c.structs {
        let Some(rs) = rust.structs.get(name) else {
            bad.push(format!(
                "struct {name}: in the headers but not mirrored in abi"
            ));
            continue;
        };
        counts.structs += 1;
        if (cs.size, cs.align) != (rs.size, rs.align) {
            bad.push(format!(
                "struct {name}: sizeof/alignof C {}/{}, Rust {}/{}",
                cs.size, cs.align, rs.size, rs.align
            ));
        }
        for i in 0..cs.fields.len().max(rs.fields.len()) {
            match (cs.fields.get(i), rs.fields.get(i)) {
                (Some(cf), Some(rf)) if cf == rf => counts.fields += 1,
                (Some((cn, co, cz)), Some((rn, ro, rz))) if cn == rn => bad.push(format!(
                    "{name}.{cn}: C offset {co} size {cz}, Rust offset {ro} size {rz}"
                )),
                (Some((cn, co, _)), Some((rn, ro, _))) => bad.push(format!(
                    "{name} field #{i}: C has `{cn}` at offset {co}, Rust has `{rn}` at offset {ro}"
                )),
                (Some((cn, co, _)), None) => bad.push(format!(
                    "{name}.{cn}: C has it at offset {co}, Rust lacks it"
                )),
                (None, Some((rn, ro, _))) => bad.push(format!(
                    "{name}.{rn}: Rust has it at offset {ro}, the C header lacks it"
                )),
                (None, None) => {}
            }
        }
    }
    for name in rust.structs.keys().filter(|n| !c.structs.contains_key(*n)) {
        bad.push(format!(
            "struct {name}: mirrored in abi but not found in the headers"
        ));
    }
    for (name, ce) in &c.enums {
        let Some(re) = rust.enums.get(name) else {
            bad.push(format!(
                "enum {name}: in the headers but not mirrored in abi"
            ));
            continue;
        };
        counts.enums += 1;
        if (ce.size, ce.signed) != (re.size, re.signed) {
            bad.push(format!(
                "enum {name}: size/signed C {}/{}, Rust {}/{}",
                ce.size, ce.signed, re.size, re.signed
            ));
        }
        let extra: Vec<&(String, i64)> = re
            .values
            .iter()
            .filter(|v| !ce.values.contains(v))
            .collect();
        let in_rust = ce.values.iter().all(|v| re.values.contains(v));
        if ce.values == re.values || (allow_newer && in_rust && names_are_new(&extra, ce)) {
            counts.values += ce.values.len();
            newer.extend(extra.iter().map(|(n, _)| n.clone()));
        } else {
            bad.push(format!(
                "enum {name}: enumerators differ: C {:?}, Rust {:?}",
                ce.values, re.values
            ));
        }
    }
    for name in rust.enums.keys().filter(|n| !c.enums.contains_key(*n)) {
        bad.push(format!(
            "enum {name}: mirrored in abi but not found in the headers"
        ));
    }
    for (name, cv) in &c.consts {
        match rust.consts.get(name) {
            Some(rv) if rv == cv => counts.consts += 1,
            Some(rv) => bad.push(format!("const {name}: C {cv}, Rust {rv}")),
            None => bad.push(format!("const {name}: in the headers but not in abi")),
        }
    }
    for name in rust.consts.keys().filter(|n| !c.consts.contains_key(*n)) {
        bad.push(format!("const {name}: in abi but not found in the headers"));
    }
    (counts, bad, newer)
}

/// Whether abi's `extra` enumerators are new ones: neither their names nor
/// their values are in the headers' enum.
fn names_are_new(extra: &[&(String, i64)], c: &EnumFacts) -> bool {
    extra
        .iter()
        .all(|(name, value)| c.values.iter().all(|(n, v)| n != name && v != value))
}

/// Enumerates the headers with gcc, then compiles and runs the probe.
fn c_facts(include: &Path, work: &Path) -> Result<Facts> {
    let includes: String = PROBE_INCLUDES
        .iter()
        .map(|h| format!("#include \"{h}\"\n"))
        .collect();
    let header_only = work.join("headers.c");
    std::fs::write(&header_only, &includes)?;
    let gcc = |args: &[&str], file: &Path| {
        let mut cmd = Command::new("gcc");
        cmd.args(args).arg("-I").arg(include).arg(file);
        output(&mut cmd)
    };
    let decls = parse_declarations(&gcc(&["-std=c11", "-E"], &header_only)?)?;
    let macros = gcc(&["-std=c11", "-E", "-dM"], &header_only)?;
    let mut consts: Vec<String> = macros
        .lines()
        .filter_map(|l| l.strip_prefix("#define ")?.split_whitespace().next())
        .filter(|n| is_checked_const(n))
        .map(str::to_string)
        .collect();
    consts.extend(decls.const_vars.iter().cloned());
    consts.sort();
    consts.dedup();
    if decls.structs.is_empty() || consts.is_empty() {
        bail!(
            "found no structs or constants in the headers under {}",
            include.display()
        );
    }

    let mut probe =
        format!("#include <stdio.h>\n#include <stddef.h>\n{includes}int main(void) {{\n");
    for (name, fields) in &decls.structs {
        writeln!(
            probe,
            "  printf(\"struct {name} %zu %zu\\n\", sizeof({name}), _Alignof({name}));"
        )?;
        for f in fields {
            writeln!(
                probe,
                "  printf(\"field {name} {f} %zu %zu\\n\", offsetof({name}, {f}), sizeof((({name}*)0)->{f}));"
            )?;
        }
    }
    for (name, values) in &decls.enums {
        writeln!(
            probe,
            "  printf(\"enum {name} %zu %d\\n\", sizeof({name}), ({name})-1 < 0);"
        )?;
        for v in values {
            writeln!(
                probe,
                "  printf(\"value {name} {v} %lld\\n\", (long long){v});"
            )?;
        }
    }
    for name in &consts {
        writeln!(
            probe,
            "  printf(\"const {name} %lld\\n\", (long long)({name}));"
        )?;
    }
    probe.push_str("  return 0;\n}\n");
    let source = work.join("probe.c");
    let binary: PathBuf = work.join("probe");
    std::fs::write(&source, probe)?;
    let mut compile = Command::new("gcc");
    compile
        .args(["-std=c11", "-Wall", "-Werror", "-o"])
        .arg(&binary)
        .arg("-I")
        .arg(include)
        .arg(&source);
    output(&mut compile)?;
    parse_facts(&output(&mut Command::new(&binary))?)
}

/// `*_STRUCT_SIZE` and the API version macros.
fn is_checked_const(name: &str) -> bool {
    name.ends_with("_STRUCT_SIZE")
        || ["SE_", "GO_", "TP_"].iter().any(|p| {
            name.strip_prefix(p)
                .is_some_and(|rest| ["MAJOR", "MINOR", "PATCH"].contains(&rest))
        })
}

/// Struct and enum definitions found in the mirrored headers.
#[derive(Debug, Default, PartialEq)]
pub struct Declarations {
    /// Struct name -> field names in order.
    pub structs: Vec<(String, Vec<String>)>,
    /// Enum name -> enumerator names in order.
    pub enums: Vec<(String, Vec<String>)>,
    /// `const size_t X_STRUCT_SIZE = ...;` variables (kernels.h has one).
    pub const_vars: Vec<String>,
}

/// Parses preprocessed C (`gcc -E`, with line markers) and keeps the
/// definitions that come from the mirrored headers.
pub fn parse_declarations(preprocessed: &str) -> Result<Declarations> {
    let tokens = tokenize(preprocessed);
    let mut decls = Declarations::default();
    let mut i = 0;
    while i < tokens.len() {
        let (text, file) = (&tokens[i].0, tokens[i].1);
        let kept_file = MIRRORED_HEADERS.iter().any(|h| file.ends_with(h));
        if text == "const"
            && kept_file
            && tokens.get(i + 1).is_some_and(|t| t.0 == "size_t")
            && let Some(name) = tokens.get(i + 2).filter(|t| t.0.ends_with("_STRUCT_SIZE"))
        {
            decls.const_vars.push(name.0.clone());
        }
        if text != "struct" && text != "enum" {
            i += 1;
            continue;
        }
        let is_typedef = i > 0 && tokens[i - 1].0 == "typedef";
        let mut j = i + 1;
        let tag = tokens
            .get(j)
            .filter(|t| is_ident(&t.0))
            .map(|t| t.0.clone());
        if tag.is_some() {
            j += 1;
        }
        if tokens.get(j).is_none_or(|t| t.0 != "{") {
            i += 1;
            continue; // A use or a forward declaration, not a definition.
        }
        let close = matching_brace(&tokens, j)?;
        let body: Vec<&str> = tokens[j + 1..close].iter().map(|t| t.0.as_str()).collect();
        let name = if is_typedef {
            tokens.get(close + 1).map(|t| t.0.clone())
        } else {
            tag
        };
        let Some(name) = name else {
            i = close + 1;
            continue;
        };
        let kept = kept_file
            || MIRRORED_SINGLE
                .iter()
                .any(|(h, n)| file.ends_with(h) && *n == name);
        if kept {
            if text == "struct" {
                decls
                    .structs
                    .push((name.clone(), struct_fields(&name, &body)?));
            } else {
                decls.enums.push((name, enumerators(&body)));
            }
        }
        i = close + 1;
    }
    Ok(decls)
}

/// Tokens with the header each came from (from gcc's `# line "file"` markers).
fn tokenize(preprocessed: &str) -> Vec<(String, &str)> {
    let mut tokens = Vec::new();
    let mut file = "";
    for line in preprocessed.lines() {
        if let Some(marker) = line.strip_prefix("# ") {
            if let Some(start) = marker.find('"') {
                let rest = &marker[start + 1..];
                file = rest.split('"').next().unwrap_or("");
            }
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let ch = chars[k];
            if ch.is_whitespace() {
                k += 1;
            } else if ch.is_ascii_alphanumeric() || ch == '_' {
                let start = k;
                while k < chars.len() && (chars[k].is_ascii_alphanumeric() || chars[k] == '_') {
                    k += 1;
                }
                tokens.push((chars[start..k].iter().collect(), file));
            } else {
                tokens.push((ch.to_string(), file));
                k += 1;
            }
        }
    }
    tokens
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

fn matching_brace(tokens: &[(String, &str)], open: usize) -> Result<usize> {
    let mut depth = 0usize;
    for (k, token) in tokens.iter().enumerate().skip(open) {
        match token.0.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return Ok(k);
                }
            }
            _ => {}
        }
    }
    bail!("unbalanced braces in the preprocessed headers")
}

/// Field names of a struct body: `T name;`, `T a, b;`, `T name[N];` and
/// function pointers `R (*name)(...);`.
fn struct_fields(struct_name: &str, body: &[&str]) -> Result<Vec<String>> {
    let mut fields = Vec::new();
    for member in split_top_level(body, ";") {
        if member.is_empty() {
            continue;
        }
        if member.iter().any(|t| *t == "{" || *t == ":") {
            bail!("{struct_name}: nested struct or bit-field is not supported by the layout check");
        }
        if let Some(p) = member
            .windows(3)
            .position(|w| w[0] == "(" && w[1] == "*" && is_ident(w[2]))
        {
            fields.push(member[p + 2].to_string());
            continue;
        }
        for declarator in split_top_level(&member, ",") {
            let mut depth = 0i32;
            let mut name = None;
            for t in &declarator {
                match *t {
                    "[" => depth += 1,
                    "]" => depth -= 1,
                    t if depth == 0 && is_ident(t) => name = Some(t),
                    _ => {}
                }
            }
            let name = name.with_context(|| format!("{struct_name}: field without a name"))?;
            fields.push(name.to_string());
        }
    }
    Ok(fields)
}

fn enumerators(body: &[&str]) -> Vec<String> {
    split_top_level(body, ",")
        .into_iter()
        .filter_map(|e| e.first().map(|n| n.to_string()))
        .collect()
}

/// Splits at `sep` outside parentheses and brackets.
fn split_top_level<'a>(tokens: &[&'a str], sep: &str) -> Vec<Vec<&'a str>> {
    let mut parts = vec![Vec::new()];
    let mut depth = 0i32;
    for &t in tokens {
        match t {
            "(" | "[" => depth += 1,
            ")" | "]" => depth -= 1,
            _ => {}
        }
        if depth == 0 && t == sep {
            parts.push(Vec::new());
        } else if let Some(last) = parts.last_mut() {
            last.push(t);
        }
    }
    parts.retain(|p| !p.is_empty());
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUST: &str = "struct SP_Platform 40 8\n\
        field SP_Platform struct_size 0 8\n\
        field SP_Platform name 16 8\n\
        const SP_PLATFORM_STRUCT_SIZE 35\n\
        enum TF_TriState 4 0\n\
        value TF_TriState TF_TriState_Off 1\n";

    #[test]
    fn equal_facts_compare_clean_and_are_counted() {
        let facts = parse_facts(RUST).unwrap();
        let (counts, bad, _) = compare(&facts, &facts, false);
        assert!(bad.is_empty(), "{bad:?}");
        let want = Counts {
            structs: 1,
            fields: 2,
            enums: 1,
            values: 1,
            consts: 1,
        };
        assert_eq!(counts, want);
    }

    #[test]
    fn a_moved_field_names_struct_field_and_both_offsets() {
        let c = parse_facts(RUST).unwrap();
        let rust = parse_facts(&RUST.replace("name 16 8", "name 24 8")).unwrap();
        let (_, bad, _) = compare(&c, &rust, false);
        assert_eq!(
            bad,
            ["SP_Platform.name: C offset 16 size 8, Rust offset 24 size 8"]
        );
    }

    #[test]
    fn missing_renamed_and_extra_members_are_reported() {
        let c = parse_facts(RUST).unwrap();
        let rust = parse_facts(
            &(RUST
                .replace("field SP_Platform name", "field SP_Platform nam")
                .replace("35", "40")
                + "struct Extra 1 1\n"),
        )
        .unwrap();
        let (_, bad, _) = compare(&c, &rust, false);
        assert_eq!(
            bad,
            [
                "SP_Platform field #1: C has `name` at offset 16, Rust has `nam` at offset 16",
                "struct Extra: mirrored in abi but not found in the headers",
                "const SP_PLATFORM_STRUCT_SIZE: C 35, Rust 40",
            ]
        );
        let (_, bad, _) = compare(&c, &Facts::default(), false);
        assert_eq!(bad.len(), 3, "{bad:?}");
    }

    #[test]
    fn an_older_tf_may_lack_enumerators_abi_has_but_not_change_them() {
        let c = parse_facts(RUST).unwrap();
        let rust =
            parse_facts(&(RUST.to_owned() + "value TF_TriState TF_TriState_On 2\n")).unwrap();
        let (_, bad, newer) = compare(&c, &rust, true);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(newer, ["TF_TriState_On"]);
        // The newest TF must match exactly.
        assert_eq!(compare(&c, &rust, false).1.len(), 1);
        // A renumbered enumerator is a mismatch either way.
        let moved = parse_facts(&RUST.replace("TF_TriState_Off 1", "TF_TriState_Off 2")).unwrap();
        assert_eq!(compare(&c, &moved, true).1.len(), 1);
    }

    #[test]
    fn parses_definitions_only_from_mirrored_headers() {
        let pre = "# 1 \"/x/tensorflow/c/experimental/grappler/grappler.h\" 1\n\
            typedef enum TF_TriState { TF_TriState_Default = 0, TF_TriState_Off, } TF_TriState;\n\
            typedef struct TF_GrapplerItem TF_GrapplerItem;\n\
            typedef struct TP_Optimizer { size_t struct_size; void* ext;\n\
              void* (*create_func)(); void (*optimize_func)(void*, const TF_Buffer*, TF_Status*);\n\
              int a, b[4]; unsigned char c; } TP_Optimizer;\n\
            # 5 \"/x/tensorflow/c/c_api.h\" 1\n\
            typedef struct TF_StringView { const char* data; size_t len; } TF_StringView;\n\
            typedef struct TF_Input { TF_Operation* oper; int index; } TF_Input;\n\
            # 9 \"/x/tensorflow/c/kernels.h\" 1\n\
            typedef struct { size_t struct_size; int start; } TF_InputRange_Args;\n\
            const size_t TF_InputRange_Args_STRUCT_SIZE = 1;\n";
        let d = parse_declarations(pre).unwrap();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            d.structs,
            [
                (
                    "TP_Optimizer".into(),
                    names(&[
                        "struct_size",
                        "ext",
                        "create_func",
                        "optimize_func",
                        "a",
                        "b",
                        "c"
                    ])
                ),
                ("TF_StringView".into(), names(&["data", "len"])),
                (
                    "TF_InputRange_Args".into(),
                    names(&["struct_size", "start"])
                ),
            ]
        );
        assert_eq!(
            d.enums,
            [(
                "TF_TriState".into(),
                names(&["TF_TriState_Default", "TF_TriState_Off"])
            )]
        );
        assert_eq!(d.const_vars, ["TF_InputRange_Args_STRUCT_SIZE"]);
    }

    #[test]
    fn checked_constants() {
        assert!(is_checked_const("SP_PLATFORM_STRUCT_SIZE"));
        assert!(is_checked_const("GO_MINOR"));
        assert!(!is_checked_const("TF_OK"));
        assert!(!is_checked_const("SE_MAJORITY"));
    }

    /// The real check, for a quick local run:
    /// `cargo test -p xtask -- --ignored layout`.
    #[test]
    #[ignore = "needs the TF venv and gcc; `cargo xtask test` runs it as a step"]
    fn layout_matches_installed_tensorflow() {
        run(None, true).unwrap();
    }
}
