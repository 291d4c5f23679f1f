//! The delegate's options, as `load_delegate(path, {key: value})` passes
//! them. An unknown key or a bad value is an error that names it.

use std::path::PathBuf;
use tensorplug_core::quant::Rounding;

/// Every option the delegate knows, for the error on an unknown one.
pub const KNOWN: &str = "`device`, `report_file`, `profile_file`, `min_nodes`, `max_partitions`, \
                         `fc_rounding`, `allow_dynamic_tensors`, `fault`, `cost_model`, \
                         `link_round_trip_us`, `link_mbytes_per_s`, `host_gflops`, `device_gflops`";

/// A failure the delegate injects into itself, for tests of the error
/// paths (the `fault` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fault {
    /// None: the default.
    #[default]
    None,
    /// Every partition's kernel `init` fails (so `Prepare` fails and the
    /// runtime keeps its CPU plan).
    Init,
    /// Every partition's `invoke` fails.
    Invoke,
}

/// The parsed options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// One item of the backend's device list (`sim`, `pcie:<file>`, …);
    /// `None`: the first of the backend's default list.
    pub device: Option<String>,
    /// Where the per-node report goes (JSON, rewritten after every
    /// partitioning and every invoke).
    pub report_file: Option<PathBuf>,
    /// Where the device's events go, as a Chrome trace (`trace.rs`).
    pub profile_file: Option<PathBuf>,
    /// A partition of fewer nodes stays on the CPU.
    pub min_nodes: usize,
    /// At most this many partitions are delegated, the largest (`None`:
    /// any number).
    pub max_partitions: Option<usize>,
    /// An injected failure, for tests.
    pub fault: Fault,
    /// Offer the runtime `kTfLiteDelegateFlagsAllowDynamicTensors`: needed
    /// for a graph with a dynamic tensor (the runtime refuses the delegate
    /// on one otherwise), at the price of resizes (the runtime no longer
    /// re-applies the delegate; a resized partition input is refused).
    pub allow_dynamic_tensors: bool,
    /// How int8 `FULLY_CONNECTED` requantizes, to match the runtime's
    /// reference kernel: `single` (TF 2.21, ai-edge-litert 2.3.0),
    /// `double` (TF 2.15 … 2.20), or `None` (`auto`, the default): as the
    /// runtime that loaded the delegate does (`runtime.rs`).
    /// `docs/delegate.md`, "int8".
    pub fc_rounding: Option<Rounding>,
    /// The link-cost model (`cost.rs`) and the figures the user gives it.
    pub cost: CostOptions,
}

/// The cost model's options; a figure not given is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostOptions {
    /// `cost_model=on` (the default): a partition other than the largest
    /// stays on the CPU when the model says the CPU is faster.
    pub on: bool,
    /// `link_round_trip_us`.
    pub round_trip_ns: Option<u64>,
    /// `link_mbytes_per_s`.
    pub bytes_per_s: Option<u64>,
    /// `host_gflops`.
    pub host_flops_per_s: Option<u64>,
    /// `device_gflops`; not given: the device's compute is not counted.
    pub device_flops_per_s: Option<u64>,
}

impl Default for CostOptions {
    fn default() -> Self {
        Self {
            on: true,
            round_trip_ns: None,
            bytes_per_s: None,
            host_flops_per_s: None,
            device_flops_per_s: None,
        }
    }
}

/// `value` as a number ≥ 0 (> 0 unless `zero_ok`) times `scale`, or the
/// error naming `key`.
fn scaled(key: &str, value: &str, scale: f64, zero_ok: bool) -> Result<Option<u64>, String> {
    let x = value.trim().parse::<f64>().ok().filter(|x| {
        x.is_finite() && (*x > 0.0 || (zero_ok && *x == 0.0)) && x * scale < u64::MAX as f64
    });
    match x {
        Some(x) => Ok(Some((x * scale).round() as u64)),
        None => Err(format!(
            "option `{key}` must be a finite number {}, got `{value}`",
            if zero_ok { "≥ 0" } else { "> 0" }
        )),
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            device: None,
            report_file: None,
            profile_file: None,
            min_nodes: 1,
            max_partitions: None,
            fault: Fault::None,
            allow_dynamic_tensors: false,
            fc_rounding: None,
            cost: CostOptions::default(),
        }
    }
}

impl Options {
    /// Parses `key=value` pairs; the first problem is the error.
    pub fn parse<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, String> {
        let mut options = Self::default();
        for (key, value) in pairs {
            match key {
                "device" => {
                    let item = value.trim();
                    if item.is_empty() || item.contains(',') {
                        return Err(format!(
                            "option `device` must name one device (e.g. `sim`), got `{value}`"
                        ));
                    }
                    options.device = Some(item.to_owned());
                }
                "report_file" => {
                    if value.is_empty() {
                        return Err("option `report_file` is empty".into());
                    }
                    options.report_file = Some(PathBuf::from(value));
                }
                "profile_file" => {
                    if value.is_empty() {
                        return Err("option `profile_file` is empty".into());
                    }
                    options.profile_file = Some(PathBuf::from(value));
                }
                "min_nodes" => {
                    options.min_nodes = value
                        .trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or_else(|| {
                            format!("option `min_nodes` must be an integer ≥ 1, got `{value}`")
                        })?;
                }
                "max_partitions" => {
                    options.max_partitions = Some(
                        value
                            .trim()
                            .parse::<usize>()
                            .ok()
                            .filter(|&n| n >= 1)
                            .ok_or_else(|| {
                                format!(
                                    "option `max_partitions` must be an integer ≥ 1, got `{value}`"
                                )
                            })?,
                    );
                }
                "allow_dynamic_tensors" => {
                    options.allow_dynamic_tensors = match value {
                        "true" | "1" => true,
                        "false" | "0" => false,
                        _ => {
                            return Err(format!(
                                "option `allow_dynamic_tensors` must be `true` or `false`, got \
                                 `{value}`"
                            ));
                        }
                    }
                }
                "fc_rounding" => {
                    options.fc_rounding = match value {
                        "auto" => None,
                        "single" => Some(Rounding::Single),
                        "double" => Some(Rounding::Double),
                        _ => {
                            return Err(format!(
                                "option `fc_rounding` must be `auto`, `single` or `double`, got \
                                 `{value}`"
                            ));
                        }
                    }
                }
                "fault" => {
                    options.fault = match value {
                        "none" => Fault::None,
                        "init" => Fault::Init,
                        "invoke" => Fault::Invoke,
                        _ => {
                            return Err(format!(
                                "option `fault` must be `none`, `init` or `invoke`, got `{value}`"
                            ));
                        }
                    }
                }
                "cost_model" => {
                    options.cost.on = match value {
                        "on" => true,
                        "off" => false,
                        _ => {
                            return Err(format!(
                                "option `cost_model` must be `on` or `off`, got `{value}`"
                            ));
                        }
                    }
                }
                "link_round_trip_us" => options.cost.round_trip_ns = scaled(key, value, 1e3, true)?,
                "link_mbytes_per_s" => options.cost.bytes_per_s = scaled(key, value, 1e6, false)?,
                "host_gflops" => options.cost.host_flops_per_s = scaled(key, value, 1e9, false)?,
                "device_gflops" => {
                    options.cost.device_flops_per_s = scaled(key, value, 1e9, false)?;
                }
                other => return Err(format!("unknown option `{other}` (known: {KNOWN})")),
            }
        }
        Ok(options)
    }
}

/// The device item to open, and where it came from: the `device` option;
/// else the first item of the backend's device setting
/// (`TENSORPLUG_<TYPE>_DEVICE`, else `TENSORPLUG_DEVICE`, as the TF plugin
/// reads it; unset or blank: skipped); else the first of the backend's
/// default list. `env` reads a variable.
pub fn device_item(
    option: Option<&str>,
    device_type: &str,
    default_devices: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(String, String), String> {
    if let Some(item) = option {
        return Ok((item.to_owned(), "the option `device`".into()));
    }
    let first = |list: &str| {
        list.split(',')
            .map(str::trim)
            .find(|s| !s.is_empty())
            .map(str::to_owned)
    };
    for var in [
        format!("TENSORPLUG_{device_type}_DEVICE"),
        "TENSORPLUG_DEVICE".to_owned(),
    ] {
        if let Some(text) = env(&var).filter(|t| !t.trim().is_empty()) {
            let item = first(&text).ok_or_else(|| format!("{var}={text:?} names no device"))?;
            return Ok((item, format!("the first item of {var}={text:?}")));
        }
    }
    let item = first(default_devices)
        .ok_or("the backend has no default device; pass the option `device`")?;
    Ok((
        item,
        format!("the first item of the default list {default_devices:?}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_options_and_names_bad_ones() {
        let o = Options::parse([
            ("device", "sim"),
            ("min_nodes", "2"),
            ("report_file", "/tmp/r"),
        ])
        .unwrap();
        assert_eq!(o.device.as_deref(), Some("sim"));
        assert_eq!(o.min_nodes, 2);
        assert_eq!(Options::parse([]).unwrap(), Options::default());
        let err = Options::parse([("devcie", "sim")]).unwrap_err();
        assert!(err.contains("unknown option `devcie`"), "{err}");
        assert!(
            Options::parse([("min_nodes", "0")])
                .unwrap_err()
                .contains("min_nodes")
        );
        assert!(
            Options::parse([("device", "sim,sim")])
                .unwrap_err()
                .contains("one device")
        );
        let max = |v| Options::parse([("max_partitions", v)]).map(|o| o.max_partitions);
        assert_eq!(max("2"), Ok(Some(2)));
        assert!(max("0").unwrap_err().contains("max_partitions"));
        let dynamic =
            |v| Options::parse([("allow_dynamic_tensors", v)]).map(|o| o.allow_dynamic_tensors);
        assert_eq!(dynamic("true"), Ok(true));
        assert_eq!(dynamic("0"), Ok(false));
        assert!(
            dynamic("yes")
                .unwrap_err()
                .contains("allow_dynamic_tensors")
        );
    }

    #[test]
    fn fc_rounding_values() {
        let r = |v| Options::parse([("fc_rounding", v)]).map(|o| o.fc_rounding);
        assert_eq!(Options::default().fc_rounding, None);
        assert_eq!(r("double"), Ok(Some(Rounding::Double)));
        assert_eq!(r("auto"), Ok(None));
        assert!(r("twice").unwrap_err().contains("`fc_rounding`"));
    }

    #[test]
    fn cost_model_values_scale_to_integers_and_name_a_bad_one() {
        let o = Options::parse([
            ("cost_model", "off"),
            ("link_round_trip_us", "2.5"),
            ("link_mbytes_per_s", "0.1"),
            ("host_gflops", "3"),
            ("device_gflops", "1e3"),
        ])
        .unwrap();
        let want = CostOptions {
            on: false,
            round_trip_ns: Some(2_500),
            bytes_per_s: Some(100_000),
            host_flops_per_s: Some(3_000_000_000),
            device_flops_per_s: Some(1_000_000_000_000),
        };
        assert_eq!(o.cost, want);
        assert!(Options::default().cost.on);
        let one = |k, v| Options::parse([(k, v)]).map(|o| o.cost);
        assert_eq!(
            one("link_round_trip_us", "0").unwrap().round_trip_ns,
            Some(0)
        );
        for (k, v) in [
            ("cost_model", "yes"),
            ("link_mbytes_per_s", "0"),
            ("host_gflops", "-1"),
            ("device_gflops", "inf"),
            ("link_round_trip_us", "NaN"),
            ("host_gflops", "1e30"),
        ] {
            let e = one(k, v).unwrap_err();
            assert!(e.contains(&format!("`{k}`")) && e.contains(v), "{e}");
        }
    }

    #[test]
    fn fault_values() {
        let fault = |v| Options::parse([("fault", v)]).map(|o| o.fault);
        assert_eq!(fault("none"), Ok(Fault::None));
        assert_eq!(fault("init"), Ok(Fault::Init));
        assert_eq!(fault("invoke"), Ok(Fault::Invoke));
        assert!(fault("x").unwrap_err().contains("`fault`"));
    }

    #[test]
    fn the_device_comes_from_the_option_then_the_setting_then_the_default() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let item = |option, vars| device_item(option, "FPGA", "sim,sim", env(vars)).unwrap().0;
        let pcie = &[("TENSORPLUG_DEVICE", " pcie:/x , sim")];
        assert_eq!(item(Some("tcp:h:1"), pcie), "tcp:h:1");
        assert_eq!(item(None, pcie), "pcie:/x");
        let both = &[
            ("TENSORPLUG_DEVICE", "sim"),
            ("TENSORPLUG_FPGA_DEVICE", "spidev:/d"),
        ];
        assert_eq!(item(None, both), "spidev:/d");
        assert_eq!(item(None, &[("TENSORPLUG_DEVICE", "  ")]), "sim");
        assert!(device_item(None, "FPGA", "sim", env(&[("TENSORPLUG_DEVICE", ",")])).is_err());
        assert!(device_item(None, "FPGA", "", env(&[])).is_err());
    }
}
