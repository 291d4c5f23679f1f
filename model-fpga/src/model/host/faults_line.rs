//! The one-line text form of [`Faults`] the model server reads on stdin:
//! `faults none` or `faults ` followed by comma-separated switches
//! `lose_next_completion`, `stuck_busy`, `reset_mid_command`,
//! `fault_next_command`, `cap_event_ring=N`.

use std::fmt;
use std::string::String;

use crate::model::Faults;

/// A `faults` line that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultsLineError(pub String);

impl fmt::Display for FaultsLineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad faults line: {}", self.0)
    }
}

impl std::error::Error for FaultsLineError {}

/// The line (without newline) that sets `faults` in a model server.
pub fn faults_line(faults: &Faults) -> String {
    let mut parts: std::vec::Vec<String> = std::vec::Vec::new();
    for (on, name) in [
        (faults.lose_next_completion, "lose_next_completion"),
        (faults.stuck_busy, "stuck_busy"),
        (faults.reset_mid_command, "reset_mid_command"),
        (faults.fault_next_command, "fault_next_command"),
    ] {
        if on {
            parts.push(name.into());
        }
    }
    if let Some(cap) = faults.cap_event_ring {
        parts.push(std::format!("cap_event_ring={cap}"));
    }
    if parts.is_empty() {
        "faults none".into()
    } else {
        std::format!("faults {}", parts.join(","))
    }
}

/// Parses a line made by [`faults_line`].
pub fn parse_faults_line(line: &str) -> Result<Faults, FaultsLineError> {
    let bad = || FaultsLineError(line.into());
    let list = line.trim().strip_prefix("faults ").ok_or_else(bad)?.trim();
    let mut faults = Faults::default();
    if list == "none" {
        return Ok(faults);
    }
    for switch in list.split(',') {
        match switch.trim() {
            "lose_next_completion" => faults.lose_next_completion = true,
            "stuck_busy" => faults.stuck_busy = true,
            "reset_mid_command" => faults.reset_mid_command = true,
            "fault_next_command" => faults.fault_next_command = true,
            other => {
                let cap = other.strip_prefix("cap_event_ring=").ok_or_else(bad)?;
                faults.cap_event_ring = Some(cap.parse().map_err(|_| bad())?);
            }
        }
    }
    Ok(faults)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_round_trips() {
        let all = Faults {
            lose_next_completion: true,
            stuck_busy: true,
            reset_mid_command: true,
            cap_event_ring: Some(3),
            fault_next_command: true,
        };
        for faults in [
            Faults::default(),
            all,
            Faults {
                stuck_busy: true,
                ..Faults::default()
            },
        ] {
            assert_eq!(parse_faults_line(&faults_line(&faults)), Ok(faults));
        }
        assert_eq!(faults_line(&Faults::default()), "faults none");
    }

    #[test]
    fn garbage_is_an_error() {
        for line in [
            "",
            "faults",
            "faults bogus",
            "faults cap_event_ring=x",
            "stop",
        ] {
            assert!(parse_faults_line(line).is_err(), "{line:?}");
        }
    }
}
