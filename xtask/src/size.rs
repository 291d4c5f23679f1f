//! `cargo xtask size`: the firmware's flash and static RAM against a
//! committed snapshot (`firmware/size.json`) and the goal (≤ 96 KiB flash,
//! ≤ 32 KiB static RAM, the model's device memory not counted). Growth of
//! more than 10 % over the snapshot fails; `--update` rewrites it.
//!
//! The firmware carries the FPGA's behavioural model, which a real board
//! has in the FPGA fabric instead: its code (symbols of the model, the
//! kernels, the `libm` functions only they call, the SPI slave and the
//! firmware's `FpgaPort`) is reported apart, and the flash goal applies to
//! the rest.

use crate::util::root;
use anyhow::{Context, Result, bail};
use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SectionKind};
use serde_json::json;
use std::path::Path;

/// The device-memory static `cargo xtask size` leaves out of static RAM.
const DEVICE_MEMORY_SYMBOL: &str = "TENSORPLUG_DEVICE_MEMORY";
/// Pieces of (mangled) symbol names of the model's code.
const MODEL_CODE: [&str; 11] = [
    // The model and its kernels: the crate `tensorplug-model-fpga`.
    "tensorplug_model_fpga",
    // Its int8 kernels are core's reference ones (TFLite's, bit for bit),
    // with the quantization block's parsing: only the model calls them.
    "9reference4int8",
    "5quant5block",
    "5quant10Requantize",
    // Likewise its gathers, segment sums and casts (exact: copies, sums
    // in row order, conversions).
    "9reference5index",
    "9reference4cast",
    "9reference3arg",
    "9reference6random",
    // expf, logf, powf, sqrtf, tanhf: called by the model's kernels only.
    "4libm4math",
    "spi5slave",
    "FpgaPort",
];
/// Goals, bytes: 96 KiB for the emulated board's image with its whole
/// catalogue (64 KiB from ABI 1.2, 72 KiB with the int8 ops;
/// `docs/firmware.md`).
const FLASH_GOAL: u64 = 96 << 10;
const RAM_GOAL: u64 = 32 << 10;
/// Allowed growth over the snapshot.
const GROWTH: f64 = 1.10;

#[derive(clap::Args)]
pub struct SizeArgs {
    /// Write the measured sizes as the new snapshot.
    #[arg(long)]
    pub update: bool,
}

/// Flash and static RAM of one ELF, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Code and read-only data (flash).
    pub text: u64,
    /// Initialised data (flash and RAM).
    pub data: u64,
    /// Zeroed data (RAM), the model's device memory not counted.
    pub bss: u64,
    /// The model's device memory (RAM), reported apart.
    pub device_memory: u64,
    /// Code of the FPGA's model within `text`, reported apart.
    pub model_code: u64,
}

impl Footprint {
    pub fn flash(&self) -> u64 {
        self.text + self.data
    }
    /// Flash a real board needs: without the model's code.
    pub fn firmware_flash(&self) -> u64 {
        self.flash().saturating_sub(self.model_code)
    }
    pub fn ram(&self) -> u64 {
        self.data + self.bss
    }
}

pub fn run_task(args: &SizeArgs) -> Result<()> {
    let elf = crate::flash::firmware::build()?;
    let now =
        footprint(&std::fs::read(&elf).with_context(|| format!("reading {}", elf.display()))?)?;
    let snapshot_path = root().join("firmware/size.json");
    if args.update {
        let text = serde_json::to_string_pretty(&json!({
            "text": now.text, "data": now.data, "bss": now.bss, "model_code": now.model_code,
        }))?;
        std::fs::write(&snapshot_path, text + "\n")?;
        println!("wrote {}", snapshot_path.display());
    }
    let snapshot = read_snapshot(&snapshot_path)?;
    println!("{}", report(&now, &snapshot));
    let problems = check(&now, &snapshot);
    if !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    Ok(())
}

/// Section sizes of an ELF: allocated sections by kind.
pub fn footprint(elf: &[u8]) -> Result<Footprint> {
    let file = object::File::parse(elf).context("parsing the firmware ELF")?;
    let mut out = Footprint {
        text: 0,
        data: 0,
        bss: 0,
        device_memory: 0,
        model_code: 0,
    };
    for section in file.sections() {
        let allocated = match section.flags() {
            SectionFlags::Elf { sh_flags } => sh_flags & u64::from(object::elf::SHF_ALLOC) != 0,
            _ => true,
        };
        if !allocated {
            continue;
        }
        match section.kind() {
            SectionKind::Text | SectionKind::ReadOnlyData | SectionKind::ReadOnlyString => {
                out.text += section.size()
            }
            SectionKind::Data => out.data += section.size(),
            SectionKind::UninitializedData => out.bss += section.size(),
            _ => {}
        }
    }
    out.device_memory = file
        .symbols()
        .find(|s| s.name() == Ok(DEVICE_MEMORY_SYMBOL))
        .map_or(0, |s| s.size());
    out.bss = out.bss.saturating_sub(out.device_memory);
    out.model_code = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text)
        .filter(|s| {
            s.name()
                .is_ok_and(|n| MODEL_CODE.iter().any(|m| n.contains(m)))
        })
        .map(|s| s.size())
        .sum();
    Ok(out)
}

fn read_snapshot(path: &Path) -> Result<Footprint> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {} (create it with --update)", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)?;
    let get = |key: &str| {
        value[key]
            .as_u64()
            .with_context(|| format!("{}: no number `{key}`", path.display()))
    };
    Ok(Footprint {
        text: get("text")?,
        data: get("data")?,
        bss: get("bss")?,
        device_memory: 0,
        model_code: value["model_code"].as_u64().unwrap_or(0),
    })
}

fn report(now: &Footprint, snapshot: &Footprint) -> String {
    let row = |what: &str, now: u64, then: u64, goal: Option<u64>| {
        let goal = goal.map_or("".into(), |g| format!("{:>8} B", g));
        format!("{what:<28}{now:>10} B{then:>12} B{goal:>12}")
    };
    [
        format!(
            "{:<28}{:>12}{:>14}{:>12}",
            "firmware (release)", "now", "snapshot", "goal"
        ),
        row("text (code, rodata)", now.text, snapshot.text, None),
        row("data", now.data, snapshot.data, None),
        row("bss (without the model)", now.bss, snapshot.bss, None),
        row("flash = text + data", now.flash(), snapshot.flash(), None),
        row(
            "  of which the FPGA model",
            now.model_code,
            snapshot.model_code,
            None,
        ),
        row(
            "  firmware flash",
            now.firmware_flash(),
            snapshot.firmware_flash(),
            Some(FLASH_GOAL),
        ),
        row(
            "static RAM = data + bss",
            now.ram(),
            snapshot.ram(),
            Some(RAM_GOAL),
        ),
        format!(
            "{:<28}{:>10} B (not counted)",
            "model device memory", now.device_memory
        ),
    ]
    .join("\n")
}

/// What fails: growth over the snapshot, or a missed goal.
pub fn check(now: &Footprint, snapshot: &Footprint) -> Vec<String> {
    let mut problems = Vec::new();
    for (what, now, then) in [
        ("flash", now.flash(), snapshot.flash()),
        ("static RAM", now.ram(), snapshot.ram()),
    ] {
        if now as f64 > then as f64 * GROWTH {
            problems.push(format!(
                "{what} grew from {then} to {now} bytes (more than 10 %; if intended, run \
                 `cargo xtask size --update` and commit firmware/size.json)"
            ));
        }
    }
    if now.firmware_flash() > FLASH_GOAL {
        problems.push(format!(
            "firmware flash {} B (the model's code not counted) is over the {FLASH_GOAL} B goal",
            now.firmware_flash()
        ));
    }
    if now.ram() > RAM_GOAL {
        problems.push(format!(
            "static RAM {} B is over the {RAM_GOAL} B goal",
            now.ram()
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(text: u64, data: u64, bss: u64) -> Footprint {
        Footprint {
            text,
            data,
            bss,
            device_memory: 0,
            model_code: 0,
        }
    }

    #[test]
    fn growth_over_ten_percent_and_missed_goals_fail() {
        let snapshot = fp(30_000, 100, 1_000);
        assert!(check(&fp(32_000, 100, 1_000), &snapshot).is_empty());
        let grown = check(&fp(34_000, 100, 1_000), &snapshot);
        assert!(
            grown.len() == 1 && grown[0].contains("flash grew"),
            "{grown:?}"
        );
        let over = check(&fp(FLASH_GOAL + 1, 0, 1_000), &fp(FLASH_GOAL + 1, 0, 1_000));
        assert!(over.iter().any(|p| p.contains("goal")), "{over:?}");
        let with_model = Footprint {
            model_code: 20_000,
            ..fp(FLASH_GOAL + 1, 0, 1_000)
        };
        assert!(
            check(&with_model, &with_model).is_empty(),
            "the model's code is not counted"
        );
    }

    #[test]
    fn sections_of_this_very_binary_are_counted() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let size = footprint(&exe).unwrap();
        assert!(size.text > 0, "{size:?}");
    }
}
