//! The model on a host thread, serving a memory-backed BAR (feature `std`):
//! [`InProcessDevice`] and [`open_sim`] for the in-process `sim` device, [`serve`] for the
//! `tensorplug-model-server` binary (a shared-memory file).
//!
//! The loop: take the host's register writes from the window, run
//! [`Model::service`](super::Model::service), publish the registers the
//! device updates. Device memory is the BAR's memory aperture, DMA goes to
//! its DMA window.

pub mod fault_rules;
mod faults_line;
mod in_process;
mod link;
mod mirror;
mod serve;
mod sim;
mod waking;

pub use faults_line::{FaultsLineError, faults_line, parse_faults_line};
pub use in_process::{DeviceWaker, InProcessDevice};
pub use link::serve_link;
pub use serve::{IdlePolicy, ServeControl, ServeOptions, serve};
pub use sim::{SIM_DMA_BYTES, SIM_MAX_ALLOCATIONS, SIM_MEMORY_BYTES, SimDriver, open_sim};
pub use waking::WakingTransport;
