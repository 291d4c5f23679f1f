//! The device-neutral conformance suite (`tensorplug_core::conformance`)
//! against the reference FPGA driver: over in-process MMIO to the
//! behavioural model on its own thread (the `sim` device), with bulk and
//! with DMA copies, and over SPI to the model in this thread.
//!
//! The stall hook of the timeout case is the model's `lose_next_completion`
//! fault: the next command runs but its completion is never written.
#![cfg(feature = "std")]

use std::sync::Arc;
use tensorplug_core::accelerator::prelude::*;

use tensorplug_core::conformance::{Config, Fixture, Report, run_fixture};
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::mmio::{HeapBar, MmioTransport};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_model_fpga::model::host::{InProcessDevice, ServeOptions};
use tensorplug_model_fpga::model::{Faults, HostModel, ModelConfig};

type Mmio = MmioTransport<Arc<HeapBar>>;
type SpiModel = HostModel;
type Spi = SpiTransport<SpiSlave<SpiModel>>;

/// Small rings, so back-pressure and event-ring wrap happen in ordinary
/// cases (as in the driver suite).
fn driver_config(dma_copies: bool) -> DriverConfig {
    DriverConfig {
        command_entries: 16,
        completion_entries: 8,
        event_entries: 256,
        dma_copies,
        ..DriverConfig::default()
    }
}

/// The stall: the next command runs, but its completion is never written.
fn lose_next_completion() -> Faults {
    Faults {
        lose_next_completion: true,
        ..Faults::default()
    }
}

/// The `sim` device: the model on its own thread behind a heap BAR.
struct Sim {
    // Dropped first: the driver, then the model thread.
    dev: Driver<Mmio, StdClock>,
    model: InProcessDevice,
}

impl Sim {
    fn new() -> Self {
        Self::with(false)
    }

    fn with(dma_copies: bool) -> Self {
        // 4 MiB of device memory, a 64 KiB DMA window.
        let model = InProcessDevice::spawn(4 << 20, 64 << 10, ServeOptions::default())
            .expect("model thread");
        let dev = Driver::new(
            model.transport(),
            StdClock::default(),
            driver_config(dma_copies),
        )
        .expect("bring-up over MMIO");
        Self { dev, model }
    }
}

impl Fixture for Sim {
    type Device = Driver<Mmio, StdClock>;
    fn device(&mut self) -> &mut Self::Device {
        &mut self.dev
    }
    fn stall_next_command(&mut self) -> bool {
        // True once the model thread has taken the switch.
        self.model.set_faults(lose_next_completion())
    }
    fn clear_stall(&mut self) {
        self.model.set_faults(Faults::default());
    }
}

/// The model in this thread behind the SPI slave (1 MiB of memory).
struct OverSpi {
    dev: Driver<Spi, StdClock>,
}

impl OverSpi {
    fn new() -> Self {
        Self::with(ModelConfig::default())
    }

    fn with(config: ModelConfig) -> Self {
        let model = HostModel::on_host(1 << 20, config).expect("model");
        let transport = SpiTransport::new(SpiSlave::new(model), SpiConfig::default());
        let dev = Driver::new(transport, StdClock::default(), driver_config(false))
            .expect("bring-up over SPI");
        Self { dev }
    }

    fn set_faults(&mut self, faults: Faults) {
        *self
            .dev
            .transport_mut()
            .device_mut()
            .target_mut()
            .faults_mut() = faults;
    }
}

impl Fixture for OverSpi {
    type Device = Driver<Spi, StdClock>;
    fn device(&mut self) -> &mut Self::Device {
        &mut self.dev
    }
    fn stall_next_command(&mut self) -> bool {
        self.set_faults(lose_next_completion());
        true
    }
    fn clear_stall(&mut self) {
        self.set_faults(Faults::default());
    }
}

// One `#[test]` per case, each on a fresh device.
tensorplug_core::conformance_tests!(mod sim = Sim::new());
tensorplug_core::conformance_tests!(mod sim_dma_copies = Sim::with(true));
tensorplug_core::conformance_tests!(mod spi = OverSpi::new());

/// The whole suite on one device, case after case: the cases leave the
/// device clean and working for the next. Every case must pass: the
/// reference FPGA declares every op and profiling, and has a stall hook.
fn whole_suite(fixture: &mut impl Fixture, cfg: &Config) -> Report {
    let report = run_fixture(fixture, cfg);
    println!("{report}");
    report.assert_passed();
    // The reference FPGA has no op of its own (the NPU example has).
    let skipped: Vec<&str> = report.skipped().map(|c| c.name).collect();
    assert_eq!(
        skipped,
        ["vendor_ops"],
        "skipped on the reference FPGA: {skipped:?}"
    );
    report
}

#[test]
fn whole_suite_on_one_sim_device() {
    let mut sim = Sim::new();
    let report = whole_suite(&mut sim, &Config::default());
    // Every int8 op ran, bit for bit (ABI 1.4's `INT8`).
    let int8 = report.cases.iter().find(|c| c.name == "op_int8").unwrap();
    match &int8.outcome {
        tensorplug_core::conformance::Outcome::Passed(m) => {
            assert!(m.ends_with("refused as undeclared: none"), "{m}")
        }
        other => panic!("op_int8: {other}"),
    }
    // Every record ran (ABI 1.10's `RECORDS`), against its record's cases.
    let records = report
        .cases
        .iter()
        .find(|c| c.name == "op_records")
        .unwrap();
    match &records.outcome {
        tensorplug_core::conformance::Outcome::Passed(m) => {
            assert!(m.ends_with("refused as undeclared: none"), "{m}")
        }
        other => panic!("op_records: {other}"),
    }
    // Everything the cases allocated was freed.
    assert_eq!(
        tensorplug_core::accelerator::Memory::memory_usage(&sim.dev).used,
        0
    );
}

#[test]
fn whole_suite_on_one_sim_device_with_dma_copies() {
    whole_suite(&mut Sim::with(true), &Config::default());
}

#[test]
fn whole_suite_on_one_spi_device() {
    whole_suite(&mut OverSpi::new(), &Config::default());
}

/// A device of ABI 1.2's features (no `CATALOGUE`, `INT8`, `REDUCTIONS`,
/// `INDEX`, `TYPES`, `RANDOM`): the driver lowers the element-wise ops to their per-op
/// opcodes, declares only those, and the ops added since (`Log`,
/// `SquaredDifference`, `Erf` … `RsqrtGrad`, the int8 ops, `ReduceMax` …
/// `SegmentSum`) are refused at launch.
#[test]
fn whole_suite_on_a_device_without_the_catalogue_commands() {
    use tensorplug_abi::device::{Features, REFERENCE_FEATURES};
    use tensorplug_core::accelerator::{Binary, OpKind, Unary};
    use tensorplug_core::conformance::Outcome;
    let config = ModelConfig {
        features: Features(
            REFERENCE_FEATURES.0
                & !(Features::CATALOGUE.0
                    | Features::INT8.0
                    | Features::INT8_ACTIVATIONS.0
                    | Features::INT8_MUL.0
                    | Features::CONCAT.0
                    | Features::RECORDS.0
                    | Features::REDUCTIONS.0
                    | Features::INDEX.0
                    | Features::TYPES.0
                    | Features::RANDOM.0),
        ),
        ..ModelConfig::default()
    };
    let mut dev = OverSpi::with(config);
    let ops = dev.dev.info().capabilities.ops;
    assert!(ops.contains(OpKind::Unary(Unary::EXP)));
    assert!(ops.contains(OpKind::Binary(Binary::RELU_GRAD)));
    assert!(!ops.contains(OpKind::Unary(Unary::named("Log"))));
    assert!(!ops.contains(OpKind::Binary(Binary::named("SquaredDifference"))));
    let report = whole_suite(&mut dev, &Config::default());
    // The members without an ABI 1.2 opcode, in catalogue order: every op
    // added since (from the catalogue, so a new op needs no edit here).
    let undeclared = |kinds: &mut dyn Iterator<Item = OpKind>| {
        let names: Vec<&str> = kinds
            .filter(|k| !ops.contains(*k))
            .map(OpKind::name)
            .collect();
        names.join(", ")
    };
    let unary = undeclared(&mut Unary::all().map(OpKind::Unary));
    let binary = undeclared(&mut Binary::all().map(OpKind::Binary));
    assert!(
        unary.starts_with("Log, Erf, ") && unary.contains(", LeakyRelu"),
        "{unary}"
    );
    assert!(
        binary.starts_with("SquaredDifference, Minimum, "),
        "{binary}"
    );
    for (case, refused) in [("op_unary", unary.as_str()), ("op_binary", binary.as_str())] {
        let c = report.cases.iter().find(|c| c.name == case).unwrap();
        match &c.outcome {
            Outcome::Passed(m) => assert!(
                m.ends_with(&format!("refused as undeclared: {refused}")),
                "{m}"
            ),
            other => panic!("{case}: {other}"),
        }
    }
    for case in ["op_int8", "op_records"] {
        let c = report.cases.iter().find(|c| c.name == case).unwrap();
        match &c.outcome {
            Outcome::Passed(m) => assert!(m.starts_with("matched the reference: none;"), "{m}"),
            other => panic!("{case}: {other}"),
        }
    }
    for case in [
        "op_reduce_max",
        "op_reduce_min",
        "op_reduce_prod",
        "op_gather",
        "op_segment_sum",
        "op_cast",
        "op_select",
        "op_arg_max",
        "op_arg_min",
        "op_random_uniform",
    ] {
        let c = report.cases.iter().find(|c| c.name == case).unwrap();
        match &c.outcome {
            Outcome::Passed(m) => assert!(m.starts_with("not declared; launch refused it"), "{m}"),
            other => panic!("{case}: {other}"),
        }
    }
}
