//! Receive-side sequence tracking: counts frames lost between two received.

/// Follows one peer's frame sequence numbers and reports gaps.
///
/// Every sender numbers its frames 0, 1, 2, … (wrapping at `u16::MAX`); a
/// receiver that sees a jump knows how many frames it lost (for example to a
/// CRC error) and can re-request or mark a profile as incomplete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SequenceTracker {
    expected: Option<u16>,
}

impl SequenceTracker {
    /// A tracker that has seen no frame yet.
    pub const fn new() -> Self {
        Self { expected: None }
    }

    /// Records a received sequence number and returns how many frames were
    /// skipped since the previous one (0 when in order or on the first frame).
    pub fn observe(&mut self, seq: u16) -> u16 {
        let missed = match self.expected {
            Some(expected) => seq.wrapping_sub(expected),
            None => 0,
        };
        self.expected = Some(seq.wrapping_add(1));
        missed
    }

    /// Forgets the peer's position (after a reconnect or a new handshake).
    pub fn reset(&mut self) {
        self.expected = None;
    }
}
