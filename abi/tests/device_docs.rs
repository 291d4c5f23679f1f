//! `docs/device-abi.md` must match the code: its register map, descriptor
//! layouts, opcode, status and event-kind tables are parsed and compared
//! with `tensorplug_abi::device`, row for row.

use std::path::Path;
use tensorplug_abi::device::layout::{LAYOUTS, REGISTER_MAP};
use tensorplug_abi::device::{CompletionStatus, EventKind, Opcode};

fn doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/device-abi.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The body rows of the first table after the heading `heading`, as cells
/// with backticks removed.
fn table(doc: &str, heading: &str) -> Vec<Vec<String>> {
    let start = doc
        .lines()
        .position(|l| l == heading)
        .unwrap_or_else(|| panic!("no heading `{heading}` in docs/device-abi.md"));
    doc.lines()
        .skip(start + 1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // header row and separator
        .map(|row| {
            row.trim_matches('|')
                .replace("\\|", "/")
                .split('|')
                .map(|cell| cell.trim().replace('`', ""))
                .collect()
        })
        .collect()
}

fn parse_number(cell: &str) -> u64 {
    match cell.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => cell.parse(),
    }
    .unwrap_or_else(|e| panic!("`{cell}` is not a number: {e}"))
}

#[test]
fn register_map_matches_the_code() {
    let rows = table(&doc(), "## Register map");
    assert_eq!(rows.len(), REGISTER_MAP.len(), "register rows");
    for (row, reg) in rows.iter().zip(REGISTER_MAP) {
        assert_eq!(
            parse_number(&row[0]),
            u64::from(reg.register.0),
            "{}",
            reg.name
        );
        assert_eq!(row[1], reg.name);
        assert_eq!(row[2], reg.access.short_name(), "{}", reg.name);
        match reg.reset {
            Some(value) => assert_eq!(parse_number(&row[3]), u64::from(value), "{}", reg.name),
            None => assert_eq!(row[3], "device", "{}", reg.name),
        }
    }
}

#[test]
fn descriptor_tables_match_the_layouts() {
    let doc = doc();
    let headings = [
        "### CommandDescriptor",
        "### CompletionDescriptor",
        "### EventDescriptor",
        "### ImageHeader",
    ];
    for (heading, layout) in headings.iter().zip(LAYOUTS) {
        assert!(heading.ends_with(layout.name));
        let rows = table(&doc, heading);
        let documented: Vec<(usize, usize, &str)> = rows
            .iter()
            .map(|r| {
                (
                    parse_number(&r[0]) as usize,
                    parse_number(&r[1]) as usize,
                    r[2].as_str(),
                )
            })
            .collect();
        let actual: Vec<(usize, usize, &str)> = layout
            .fields
            .iter()
            .map(|f| (f.offset, f.size, f.name))
            .collect();
        assert_eq!(documented, actual, "{}", layout.name);
    }
}

#[test]
fn opcode_status_and_event_tables_match_the_code() {
    let doc = doc();
    let opcodes: Vec<(u64, String)> = table(&doc, "### Opcodes")
        .into_iter()
        .map(|r| (parse_number(&r[0]), r[1].clone()))
        .collect();
    let expected: Vec<(u64, String)> = Opcode::ALL
        .iter()
        .map(|o| (u64::from(o.0), o.name().unwrap().to_owned()))
        .collect();
    assert_eq!(opcodes, expected);

    let statuses: Vec<(u64, String)> = table(&doc, "### Completion statuses")
        .into_iter()
        .map(|r| (parse_number(&r[0]), r[1].clone()))
        .collect();
    let expected: Vec<(u64, String)> = CompletionStatus::ALL
        .iter()
        .map(|s| (u64::from(s.0), s.name().unwrap().to_owned()))
        .collect();
    assert_eq!(statuses, expected);

    let kinds: Vec<u64> = table(&doc, "### Event kinds")
        .iter()
        .map(|r| parse_number(&r[0]))
        .collect();
    let expected: Vec<u64> = EventKind::ALL.iter().map(|k| u64::from(k.0)).collect();
    assert_eq!(kinds, expected);
}
