//! One item of the FPGA's device list (`TENSORPLUG_DEVICE`, comma-separated;
//! the list itself is the bridge's).

use std::fmt;
use std::path::PathBuf;

/// The device kinds, quoted in every error.
pub const ACCEPTED: &str = "`sim`, `pcie:<sysfs resource or shm file>`, `spidev:<dev>`, \
                            `serial:<tty>`, `tcp:<host:port>` (remote bus), \
                            `mcu-serial:<tty>` or `mcu-tcp:<host:port>` (driver on the MCU)";

/// One device to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    /// The behavioural model, in-process, behind the MMIO transport.
    Sim,
    /// A PCIe BAR: a sysfs `resource` file or a model's shared-memory file.
    Pcie(PathBuf),
    /// A Linux spidev (`/dev/spidevB.C`).
    Spidev(PathBuf),
    /// The device's link over a serial line.
    Serial(PathBuf),
    /// The device's link over TCP (`host:port`).
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

/// Parses one item (trimmed, non-empty).
pub fn parse_item(item: &str) -> Result<DeviceSpec, String> {
    if item == "sim" {
        return Ok(DeviceSpec::Sim);
    }
    let Some((kind, target)) = item.split_once(':') else {
        return Err(format!("unknown device `{item}`"));
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
    fn items_parse_and_print_back() {
        for (item, spec) in [
            ("sim", DeviceSpec::Sim),
            (
                "pcie:/dev/shm/fpga",
                DeviceSpec::Pcie("/dev/shm/fpga".into()),
            ),
            (
                "tcp:localhost:5555",
                DeviceSpec::Tcp("localhost:5555".into()),
            ),
            (
                "serial:/dev/ttyUSB0",
                DeviceSpec::Serial("/dev/ttyUSB0".into()),
            ),
            (
                "spidev:/dev/spidev0.0",
                DeviceSpec::Spidev("/dev/spidev0.0".into()),
            ),
        ] {
            assert_eq!(parse_item(item).unwrap(), spec);
            assert_eq!(spec.to_string(), item);
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        for (item, needle) in [
            ("bogus", "unknown device `bogus`"),
            ("gpu:0", "unknown device kind `gpu`"),
            ("pcie:", "`pcie:` needs a target"),
            ("tcp:localhost", "not `tcp:<host>:<port>`"),
            ("tcp:host:99999", "not `tcp:<host>:<port>`"),
        ] {
            let message = parse_item(item).unwrap_err();
            assert!(message.contains(needle), "{item}: {message}");
        }
    }
}
