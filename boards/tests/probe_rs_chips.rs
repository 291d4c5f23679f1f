//! Every board on a desk names a chip probe-rs knows (its built-in target
//! database, the one `probe-rs download --chip` reads), and the board's
//! flash and RAM lie inside that chip's: what can be checked of flashing
//! without the board.

use probe_rs::config::{MemoryRegion, Registry};
use std::ops::Range;
use std::path::Path;
use tensorplug_boards::Region;

/// Whether `region` lies inside one of `ranges`, adjacent ranges joined
/// (probe-rs lists an STM32F4's SRAM1 and SRAM2 apart).
fn inside(region: &Region, ranges: &[Range<u64>]) -> bool {
    let mut sorted = ranges.to_vec();
    sorted.sort_by_key(|r| r.start);
    let mut joined: Vec<Range<u64>> = Vec::new();
    for r in sorted {
        match joined.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => joined.push(r),
        }
    }
    joined
        .iter()
        .any(|r| r.start <= region.origin && region.end() <= r.end)
}

#[test]
fn each_real_board_s_chip_is_in_probe_rs_and_its_memory_fits_the_chip() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware/boards");
    let boards = tensorplug_boards::all(&dir).expect("the board files load");
    let registry = Registry::from_builtin_families();
    let mut checked = Vec::new();
    for board in boards {
        let Some(chip) = board.probe_rs_chip.as_deref() else {
            continue;
        };
        let target = registry.get_target_by_name(chip).unwrap_or_else(|e| {
            panic!(
                "board `{}`: probe-rs does not know chip `{chip}` ({e}); close names: {:?}",
                board.name,
                registry.search_chips(&chip[..chip.len().min(9)])
            )
        });
        let (mut nvm, mut ram) = (Vec::new(), Vec::new());
        for region in &target.memory_map {
            match region {
                MemoryRegion::Nvm(r) => nvm.push(r.range.clone()),
                MemoryRegion::Ram(r) => ram.push(r.range.clone()),
                MemoryRegion::Generic(_) => {}
            }
        }
        assert!(
            inside(&board.memory.flash, &nvm),
            "board `{}`: flash {:?} is not inside {chip}'s flash {nvm:x?}",
            board.name,
            board.memory.flash
        );
        assert!(
            inside(&board.memory.ram, &ram),
            "board `{}`: RAM {:?} is not inside one of {chip}'s RAM regions {ram:x?}",
            board.name,
            board.memory.ram
        );
        checked.push(board.name);
    }
    assert!(!checked.is_empty(), "no board names a probe-rs chip");
}

#[test]
fn a_chip_probe_rs_does_not_know_is_told_apart() {
    let registry = Registry::from_builtin_families();
    assert!(registry.get_target_by_name("STM32F405RGTx").is_ok());
    assert!(
        registry
            .get_target_by_name("STM32F405XXTx-not-a-chip")
            .is_err()
    );
}
