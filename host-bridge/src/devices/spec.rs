//! Parsing `TENSORPLUG_DEVICE`: a comma-separated list of devices, each
//! becoming `/device:FPGA:<position>`.

use crate::error::{Error, Result};
use std::fmt;
use std::path::PathBuf;

/// The environment variable that selects the devices.
pub const DEVICE_ENV: &str = "TENSORPLUG_DEVICE";

/// What the accepted forms are, quoted in every parse error.
pub const ACCEPTED: &str = "expected a comma-separated list of `sim`, `pcie:<sysfs resource or \
                            shm file>`, `spidev:<dev>`, `serial:<tty>` or `tcp:<host:port>`";

/// One device to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    /// The behavioural model, in-process, behind the MMIO transport.
    Sim,
    /// A PCIe BAR: a sysfs `resource` file or a model's shared-memory file.
    Pcie(PathBuf),
    /// A Linux spidev (`/dev/spidevB.C`).
    Spidev(PathBuf),
    /// The MCU firmware over a serial line.
    Serial(PathBuf),
    /// The MCU firmware over TCP (`host:port`).
    Tcp(String),
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sim => f.write_str("sim"),
            Self::Pcie(path) => write!(f, "pcie:{}", path.display()),
            Self::Spidev(path) => write!(f, "spidev:{}", path.display()),
            Self::Serial(path) => write!(f, "serial:{}", path.display()),
            Self::Tcp(addr) => write!(f, "tcp:{addr}"),
        }
    }
}

/// Reads [`DEVICE_ENV`]; unset or empty means one `sim` device.
pub fn from_env() -> Result<Vec<DeviceSpec>> {
    match std::env::var(DEVICE_ENV) {
        Ok(value) => parse(&value),
        Err(std::env::VarError::NotPresent) => Ok(vec![DeviceSpec::Sim]),
        Err(std::env::VarError::NotUnicode(raw)) => Err(Error::DeviceSpec {
            value: raw.to_string_lossy().into_owned(),
            reason: "the value is not valid UTF-8".into(),
        }),
    }
}

/// Parses a `TENSORPLUG_DEVICE` value.
pub fn parse(value: &str) -> Result<Vec<DeviceSpec>> {
    if value.trim().is_empty() {
        return Ok(vec![DeviceSpec::Sim]);
    }
    let fail = |reason: String| Error::DeviceSpec {
        value: value.to_owned(),
        reason,
    };
    value
        .split(',')
        .enumerate()
        .map(|(index, item)| {
            parse_item(item.trim())
                .map_err(|why| fail(format!("item {}: {why}; {ACCEPTED}", index + 1)))
        })
        .collect()
}

fn parse_item(item: &str) -> std::result::Result<DeviceSpec, String> {
    if item == "sim" {
        return Ok(DeviceSpec::Sim);
    }
    let Some((kind, target)) = item.split_once(':') else {
        return Err(if item.is_empty() {
            "empty entry".into()
        } else {
            format!("unknown device `{item}`")
        });
    };
    if target.is_empty() {
        return Err(format!("`{kind}:` needs a target after the colon"));
    }
    match kind {
        "pcie" => Ok(DeviceSpec::Pcie(target.into())),
        "spidev" => Ok(DeviceSpec::Spidev(target.into())),
        "serial" => Ok(DeviceSpec::Serial(target.into())),
        "tcp"
            if target
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok()) =>
        {
            Ok(DeviceSpec::Tcp(target.into()))
        }
        "tcp" => Err(format!("`{item}` is not `tcp:<host>:<port>`")),
        _ => Err(format!("unknown device kind `{kind}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_means_one_sim_device() {
        assert_eq!(parse("").unwrap(), [DeviceSpec::Sim]);
        assert_eq!(parse("  ").unwrap(), [DeviceSpec::Sim]);
    }

    #[test]
    fn lists_keep_their_order() {
        let specs =
            parse("sim, pcie:/dev/shm/fpga ,tcp:localhost:5555,serial:/dev/ttyUSB0").unwrap();
        assert_eq!(
            specs,
            [
                DeviceSpec::Sim,
                DeviceSpec::Pcie("/dev/shm/fpga".into()),
                DeviceSpec::Tcp("localhost:5555".into()),
                DeviceSpec::Serial("/dev/ttyUSB0".into()),
            ]
        );
        assert_eq!(specs[1].to_string(), "pcie:/dev/shm/fpga");
    }

    #[test]
    fn errors_name_the_item_and_the_accepted_forms() {
        for (value, needle) in [
            ("bogus", "item 1: unknown device `bogus`"),
            ("sim,,sim", "item 2: empty entry"),
            ("sim,gpu:0", "item 2: unknown device kind `gpu`"),
            ("pcie:", "`pcie:` needs a target"),
            ("tcp:localhost", "not `tcp:<host>:<port>`"),
            ("tcp:host:99999", "not `tcp:<host>:<port>`"),
        ] {
            let message = parse(value).unwrap_err().to_string();
            assert!(message.contains(needle), "{value}: {message}");
            assert!(message.contains("TENSORPLUG_DEVICE="), "{message}");
            assert!(message.contains(ACCEPTED), "{message}");
        }
    }
}
