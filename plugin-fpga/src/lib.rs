//! The reference FPGA's TensorFlow plugin (`libtensorplug_fpga.so`): the
//! device kinds of `TENSORPLUG_DEVICE` and the bridge's entry points.
//! Everything TensorFlow-facing is `tensorplug-host-bridge`'s.

pub mod open;
pub mod spec;

use spec::DeviceSpec;
use std::ffi::CStr;
use tensorplug_host_bridge::prelude::{Backend, DynAccelerator, OpenError, erase};

/// The reference FPGA: `/device:FPGA:<n>`.
pub struct Fpga;

impl Backend for Fpga {
    const DEVICE_TYPE: &'static CStr = c"FPGA";
    const VENDOR: &'static CStr = c"tensorplug";
    const DEVICE_KINDS: &'static str = spec::ACCEPTED;

    fn open(item: &str) -> Result<Box<DynAccelerator>, OpenError> {
        // The baud rate is read (and a bad setting refused) for MCU items only.
        if item.starts_with("mcu-")
            && let Some(opened) = tensorplug_link_host::open_mcu(
                item,
                open::link::baud()?,
                open::link::answer_timeout()?,
                &[],
            )
        {
            return Ok(erase(opened?));
        }
        let spec =
            spec::parse_item(item).map_err(|why| format!("{why}; expected {}", spec::ACCEPTED))?;
        match spec {
            DeviceSpec::Sim => open::sim::open(),
            DeviceSpec::Pcie(path) => open::sim::open_pcie(&path),
            DeviceSpec::Spidev(path) => open::spidev::open(&path),
            DeviceSpec::Serial(path) => open::link::open_serial(&path),
            DeviceSpec::Tcp(addr) => open::link::open_tcp(&addr),
        }
    }
}

tensorplug_host_bridge::export_plugin!(Fpga);
// The same devices for LiteRT: `load_delegate("libtensorplug_fpga.so", {"device": "sim"})`.
tensorplug_delegate::export_delegate!(Fpga);
