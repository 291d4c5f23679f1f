//! Property test: any NumPy broadcast of rank ≤ 6 lowered by the driver
//! (flat, 3-D, or several 3-D commands over outer axes) computes exactly
//! what `kernels::reference::binary` computes. Over the SPI model, which
//! runs synchronously in this thread.
#![cfg(feature = "std")]

#[macro_use]
mod driver_suite;

use proptest::prelude::*;
use tensorplug_core::accelerator::{Binary, OpKind};
use tensorplug_device_fpga::driver::{Driver, StdClock};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_model_fpga::kernels::{BinaryOp, reference};
use tensorplug_model_fpga::model::{HostModel, ModelConfig};

type Spi = SpiTransport<SpiSlave<HostModel>>;

fn driver() -> Driver<Spi, StdClock> {
    let model = HostModel::on_host(1 << 20, ModelConfig::default()).unwrap();
    let spi = SpiTransport::new(SpiSlave::new(model), SpiConfig::default());
    Driver::new(spi, StdClock::default(), driver_suite::config()).unwrap()
}

/// Two input shapes that broadcast: per output axis (extent 2..5) whether
/// each input has extent 1 there; either input may also lack up to two
/// leading axes.
fn shapes() -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
    let axes = prop::collection::vec((2u64..5, any::<bool>(), any::<bool>()), 1..=6);
    (axes, 0usize..3, 0usize..3).prop_map(|(axes, drop_a, drop_b)| {
        let keep = |drop: usize| &axes[drop.min(axes.len())..];
        let a = keep(drop_a)
            .iter()
            .map(|&(d, one, _)| if one { 1 } else { d });
        let b = keep(drop_b)
            .iter()
            .map(|&(d, _, one)| if one { 1 } else { d });
        (a.collect(), b.collect())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn broadcast_lowering_matches_reference((a_dims, b_dims) in shapes(), op in 0usize..4) {
        // The output is the broadcast of the two (size-1 axes of both stay 1).
        let rank = a_dims.len().max(b_dims.len());
        let pad = |d: &[u64], i: usize| if i + d.len() < rank { 1 } else { d[i + d.len() - rank] };
        let out: Vec<u64> = (0..rank).map(|i| pad(&a_dims, i).max(pad(&b_dims, i))).collect();
        let (kind, binary) = [
            (OpKind::Binary(Binary::ADD), BinaryOp::Add),
            (OpKind::Binary(Binary::SUB), BinaryOp::Sub),
            (OpKind::Binary(Binary::MUL), BinaryOp::Mul),
            (OpKind::Binary(Binary::MAXIMUM), BinaryOp::Maximum),
        ][op];
        let a = driver_suite::values(a_dims.iter().product::<u64>() as usize, 1);
        let b = driver_suite::values(b_dims.iter().product::<u64>() as usize, 2);
        let mut dev = driver();
        let got = driver_suite::run(&mut dev, kind, &[(&a_dims, &a), (&b_dims, &b)], &out);
        let mut want = vec![0.0; got.len()];
        let us = |d: &[u64]| d.iter().map(|&x| x as usize).collect::<Vec<_>>();
        reference::binary(binary, &a, &us(&a_dims), &b, &us(&b_dims), &mut want);
        prop_assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}
