//! The profiling session: `start` / `stop` / `collect`, restartable.
//!
//! A [`Session`] is fixed-capacity (no allocation): it holds the state, the
//! host time window and one clock sync pair per device at start and at stop.
//! It does not own the event rings; the caller drains them and hands the
//! events, with the clock maps from [`Session::collect`], to the XSpace
//! builder (feature `alloc`).
//!
//! ```text
//!         start            stop             collect
//! Idle ─────────▶ Running ───────▶ Stopped ─────────▶ Idle
//!                                     │ start (discards the uncollected window)
//!                                     ▼
//!                                  Running
//! ```
//! Every other transition is an error and changes nothing (see
//! `docs/profiling.md`).

use crate::clock::{ClockError, ClockMap, SyncPair};
use crate::event::{Event, EventKind};
use heapless::Vec;

/// A device's clock as seen at `start`: a sync pair and its nominal rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeviceSync {
    /// Host/device clock reading taken at start.
    pub pair: SyncPair,
    /// The device tick counter's nominal frequency.
    pub frequency_hz: u64,
}

/// Why a session call was refused. The session is unchanged after an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SessionError {
    /// `start` while a session is running.
    AlreadyRunning,
    /// `stop` without a running session.
    NotStarted,
    /// `collect` while the session is still running: call `stop` first.
    StillRunning,
    /// `collect` with no stopped session (never started, or already collected).
    NoSession,
    /// More devices (or stop pairs) than the session's capacity / start.
    TooManyDevices,
    /// A sync pair or frequency is unusable.
    Clock(ClockError),
    /// [`Session::host_event`] was given a device-side event kind.
    NotHostKind,
}

/// Category of a [`SessionError`], in the embedded-hal style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SessionErrorKind {
    /// The call is not valid in the session's current state.
    WrongState,
    /// The caller passed an impossible value.
    InvalidInput,
}

impl SessionError {
    /// The error's category.
    pub const fn kind(&self) -> SessionErrorKind {
        match self {
            Self::AlreadyRunning | Self::NotStarted | Self::StillRunning | Self::NoSession => {
                SessionErrorKind::WrongState
            }
            Self::TooManyDevices | Self::Clock(_) | Self::NotHostKind => {
                SessionErrorKind::InvalidInput
            }
        }
    }
}

impl From<ClockError> for SessionError {
    fn from(err: ClockError) -> Self {
        Self::Clock(err)
    }
}

impl core::fmt::Display for SessionError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::AlreadyRunning => f.write_str("a profiling session is already running"),
            Self::NotStarted => f.write_str("stop called with no running profiling session"),
            Self::StillRunning => f.write_str("collect called before stop"),
            Self::NoSession => f.write_str("collect called with no stopped profiling session"),
            Self::TooManyDevices => f.write_str("more devices than the profiling session holds"),
            Self::Clock(err) => write!(f, "clock sync: {err}"),
            Self::NotHostKind => f.write_str("host_event needs a Host* event kind"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
enum State {
    Idle,
    Running,
    Stopped,
}

/// What [`Session::collect`] hands over: the host time window and one clock
/// map per device, in the order the devices were given to `start`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collected<const DEVICES: usize> {
    /// Host time (ns) at `start`: the timeline's origin.
    pub start_host_ns: u64,
    /// Host time (ns) at `stop`.
    pub stop_host_ns: u64,
    /// Device ticks to host time, per device.
    pub clocks: Vec<ClockMap, DEVICES>,
}

/// A restartable profiling session for up to `DEVICES` devices.
#[derive(Clone, Debug)]
pub struct Session<const DEVICES: usize> {
    state: State,
    start_host_ns: u64,
    stop_host_ns: u64,
    devices: Vec<DeviceSync, DEVICES>,
    clocks: Vec<ClockMap, DEVICES>,
    discarded: u32,
}

impl<const DEVICES: usize> Default for Session<DEVICES> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const DEVICES: usize> Session<DEVICES> {
    /// An idle session.
    pub const fn new() -> Self {
        Self {
            state: State::Idle,
            start_host_ns: 0,
            stop_host_ns: 0,
            devices: Vec::new(),
            clocks: Vec::new(),
            discarded: 0,
        }
    }

    /// True between `start` and `stop`: record events only then.
    pub const fn is_running(&self) -> bool {
        matches!(self.state, State::Running)
    }

    /// Windows that were stopped but never collected before a new `start`.
    pub const fn discarded_windows(&self) -> u32 {
        self.discarded
    }

    /// Starts a session at host time `host_ns` with each device's sync pair.
    ///
    /// Allowed when idle, or stopped (the uncollected window is discarded and
    /// counted in [`Self::discarded_windows`]). Zero devices is valid: collect
    /// then yields no clocks and the export is empty.
    pub fn start(&mut self, host_ns: u64, devices: &[DeviceSync]) -> Result<(), SessionError> {
        if self.is_running() {
            return Err(SessionError::AlreadyRunning);
        }
        let mut checked = Vec::new();
        for device in devices {
            ClockMap::nominal(device.pair, device.frequency_hz)?;
            checked
                .push(*device)
                .map_err(|_| SessionError::TooManyDevices)?;
        }
        if self.state == State::Stopped {
            self.discarded = self.discarded.saturating_add(1);
        }
        self.devices = checked;
        self.clocks.clear();
        self.start_host_ns = host_ns;
        self.state = State::Running;
        Ok(())
    }

    /// Stops the running session at host time `host_ns`.
    ///
    /// `stop_pairs[i]` is device `i`'s sync pair at stop; devices without one
    /// (a shorter slice) keep the nominal rate.
    pub fn stop(&mut self, host_ns: u64, stop_pairs: &[SyncPair]) -> Result<(), SessionError> {
        if !self.is_running() {
            return Err(SessionError::NotStarted);
        }
        if stop_pairs.len() > self.devices.len() {
            return Err(SessionError::TooManyDevices);
        }
        let mut clocks = Vec::new();
        for (index, device) in self.devices.iter().enumerate() {
            let map = match stop_pairs.get(index) {
                Some(stop) => ClockMap::from_pairs(device.pair, *stop, device.frequency_hz)?,
                None => ClockMap::nominal(device.pair, device.frequency_hz)?,
            };
            // Capacity is the same as `devices`, so this cannot fail.
            clocks.push(map).map_err(|_| SessionError::TooManyDevices)?;
        }
        self.clocks = clocks;
        self.stop_host_ns = host_ns.max(self.start_host_ns);
        self.state = State::Stopped;
        Ok(())
    }

    /// Hands over the stopped session's window and clocks and returns to idle.
    pub fn collect(&mut self) -> Result<Collected<DEVICES>, SessionError> {
        match self.state {
            State::Idle => Err(SessionError::NoSession),
            State::Running => Err(SessionError::StillRunning),
            State::Stopped => {
                self.state = State::Idle;
                self.devices.clear();
                Ok(Collected {
                    start_host_ns: self.start_host_ns,
                    stop_host_ns: self.stop_host_ns,
                    clocks: core::mem::take(&mut self.clocks),
                })
            }
        }
    }

    /// A host-API event (launch, copy, sync) stamped with host time, to push
    /// into the host ring beside the device's events. `Ok(None)` when no
    /// session is running (nothing to record).
    pub fn host_event(
        &self,
        kind: EventKind,
        host_ns: u64,
        queue: u8,
        op_id: u16,
        arg: u32,
    ) -> Result<Option<Event>, SessionError> {
        if !is_host_kind(kind) {
            return Err(SessionError::NotHostKind);
        }
        Ok(self
            .is_running()
            .then(|| Event::new(kind, host_ns, queue, op_id, arg)))
    }
}

/// True for the `Host*` kinds, whose timestamps are host nanoseconds.
pub const fn is_host_kind(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::HostLaunchBegin
            | EventKind::HostLaunchEnd
            | EventKind::HostCopyBegin
            | EventKind::HostCopyEnd
            | EventKind::HostSyncBegin
            | EventKind::HostSyncEnd
    )
}

#[cfg(test)]
mod tests;
