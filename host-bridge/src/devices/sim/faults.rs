//! `TENSORPLUG_SIM_FAULTS`: a **testing aid** that makes a `sim` device fail
//! on purpose, so tests can check how device errors reach TensorFlow.
//!
//! The value is a comma-separated list of `<switch>@<op>` rules. `<switch>`
//! is a one-shot fault switch of the model (`fault_next_command`,
//! `lose_next_completion`, `reset_mid_command`; see `docs/device-spec.md`),
//! `<op>` an [`OpKind`] name ([`op_kind_name`]). Each rule fires once: right
//! before the first launch of that op kind, the switch is set on the model
//! (and taken by its thread), so that launch's first command fails.
//! Unset or empty: no injection, the device is the plain `sim`.

use core::time::Duration;
use tensorplug_core::accelerator::{
    Accelerator, DeviceAddr, DeviceInfo, Drained, Fence, MemoryUsage, OpDesc, OpKind, QueueId,
};
use tensorplug_core::event::Event;
use tensorplug_device_fpga::model::Faults;
use tensorplug_device_fpga::model::host::InProcessDevice;

/// The environment variable read when a `sim` device opens.
pub const SIM_FAULTS_ENV: &str = "TENSORPLUG_SIM_FAULTS";

/// The name a rule uses for an op kind.
pub fn op_kind_name(kind: OpKind) -> &'static str {
    match kind {
        OpKind::MatMul { .. } => "matmul",
        OpKind::FusedMatMul { .. } => "fused_matmul",
        OpKind::BiasAdd => "bias_add",
        OpKind::Add => "add",
        OpKind::Sub => "sub",
        OpKind::Mul => "mul",
        OpKind::Maximum => "maximum",
        OpKind::Relu => "relu",
        OpKind::Softmax => "softmax",
        OpKind::ReduceSum => "reduce_sum",
        _ => "other",
    }
}

/// One `<switch>@<op>` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRule {
    /// The switches to set.
    pub faults: Faults,
    /// The [`op_kind_name`] that triggers it.
    pub op: String,
}

/// Parses a [`SIM_FAULTS_ENV`] value.
pub fn parse(value: &str) -> Result<Vec<FaultRule>, String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(Vec::new());
    }
    value
        .split(',')
        .map(|rule| {
            let (switch, op) = rule.trim().split_once('@').ok_or_else(|| {
                format!("`{rule}` is not `<switch>@<op>` (e.g. fault_next_command@softmax)")
            })?;
            let mut faults = Faults::default();
            match switch {
                "fault_next_command" => faults.fault_next_command = true,
                "lose_next_completion" => faults.lose_next_completion = true,
                "reset_mid_command" => faults.reset_mid_command = true,
                other => {
                    return Err(format!(
                        "unknown switch `{other}` (fault_next_command, lose_next_completion, \
                         reset_mid_command)"
                    ));
                }
            }
            if op.is_empty() {
                return Err(format!("`{rule}` names no op"));
            }
            Ok(FaultRule {
                faults,
                op: op.to_owned(),
            })
        })
        .collect()
}

/// The rules from the environment (empty when unset).
pub fn from_env() -> Result<Vec<FaultRule>, String> {
    match std::env::var(SIM_FAULTS_ENV) {
        Ok(value) => parse(&value).map_err(|why| format!("{SIM_FAULTS_ENV}={value:?}: {why}")),
        Err(_) => Ok(Vec::new()),
    }
}

/// The driver of a `sim` device plus its model thread, arming the model's
/// fault switches before launches that match a rule.
pub struct FaultInjector<A> {
    // Field order: the driver drops before the model thread stops.
    accel: A,
    device: InProcessDevice,
    rules: Vec<FaultRule>,
}

impl<A> FaultInjector<A> {
    /// Wraps the driver of `device`.
    pub fn new(accel: A, device: InProcessDevice, rules: Vec<FaultRule>) -> Self {
        Self {
            accel,
            device,
            rules,
        }
    }

    fn arm_for(&mut self, kind: OpKind) {
        let name = op_kind_name(kind);
        if let Some(at) = self.rules.iter().position(|rule| rule.op == name) {
            let rule = self.rules.remove(at);
            if !self.device.set_faults(rule.faults) {
                crate::log::warn(format_args!(
                    "{SIM_FAULTS_ENV}: the model did not take the faults for `{name}` in time"
                ));
            }
        }
    }
}

impl<A: Accelerator> Accelerator for FaultInjector<A> {
    type Error = A::Error;

    fn info(&self) -> DeviceInfo {
        self.accel.info()
    }
    fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, A::Error> {
        self.accel.allocate(bytes, align)
    }
    fn deallocate(&mut self, addr: DeviceAddr) -> Result<(), A::Error> {
        self.accel.deallocate(addr)
    }
    fn memory_usage(&self) -> MemoryUsage {
        self.accel.memory_usage()
    }
    unsafe fn copy_to_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: *const u8,
        len: usize,
    ) -> Result<Fence, A::Error> {
        // SAFETY: forwarded contract.
        unsafe { self.accel.copy_to_device(queue, dst, src, len) }
    }
    unsafe fn copy_from_device(
        &mut self,
        queue: QueueId,
        dst: *mut u8,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, A::Error> {
        // SAFETY: forwarded contract.
        unsafe { self.accel.copy_from_device(queue, dst, src, len) }
    }
    fn copy_on_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, A::Error> {
        self.accel.copy_on_device(queue, dst, src, len)
    }
    fn fill(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, A::Error> {
        self.accel.fill(queue, dst, len, pattern)
    }
    fn launch(&mut self, queue: QueueId, op: &OpDesc<'_>) -> Result<Fence, A::Error> {
        self.arm_for(op.kind);
        self.accel.launch(queue, op)
    }
    fn poll(&mut self, fence: Fence) -> Result<bool, A::Error> {
        self.accel.poll(fence)
    }
    fn wait(&mut self, fence: Fence, timeout: Duration) -> Result<(), A::Error> {
        self.accel.wait(fence, timeout)
    }
    fn reset(&mut self) -> Result<(), A::Error> {
        self.accel.reset()
    }
    fn timestamp(&mut self) -> Result<u64, A::Error> {
        self.accel.timestamp()
    }
    fn set_profiling(&mut self, enabled: bool) -> Result<(), A::Error> {
        self.accel.set_profiling(enabled)
    }
    fn drain_events(&mut self, out: &mut [Event]) -> Result<Drained, A::Error> {
        self.accel.drain_events(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_errors_say_what_is_accepted() {
        assert!(parse(" ").unwrap().is_empty());
        let rules = parse("fault_next_command@softmax, lose_next_completion@matmul").unwrap();
        assert_eq!(rules.len(), 2);
        assert!(rules[0].faults.fault_next_command && rules[0].op == "softmax");
        assert!(rules[1].faults.lose_next_completion && rules[1].op == "matmul");
        assert!(parse("softmax").unwrap_err().contains("<switch>@<op>"));
        assert!(
            parse("stuck_busy@relu")
                .unwrap_err()
                .contains("unknown switch")
        );
        assert!(
            parse("fault_next_command@")
                .unwrap_err()
                .contains("names no op")
        );
    }

    #[test]
    fn every_kind_has_a_distinct_name() {
        let kinds = [
            OpKind::MatMul {
                transpose_a: false,
                transpose_b: false,
            },
            OpKind::FusedMatMul {
                transpose_a: false,
                transpose_b: false,
                relu: true,
            },
            OpKind::BiasAdd,
            OpKind::Add,
            OpKind::Sub,
            OpKind::Mul,
            OpKind::Maximum,
            OpKind::Relu,
            OpKind::Softmax,
            OpKind::ReduceSum,
        ];
        let names: std::collections::HashSet<_> = kinds.map(op_kind_name).into_iter().collect();
        assert_eq!(names.len(), kinds.len());
        assert!(!names.contains("other"));
    }
}
