//! Device strings as TF writes them into `NodeDef.device`.

/// Whether `device` names a device of `device_type`: a `/device:FPGA:<id>` part in a
/// full (`/job:localhost/replica:0/task:0/device:FPGA:0`) or short
/// (`/device:FPGA:0`) name. TF normalizes the type to upper case after
/// placement; an empty (unplaced) device never matches.
pub fn is_ours(device: &str, device_type: &str) -> bool {
    device.split('/').any(|part| {
        part.strip_prefix("device:")
            .and_then(|rest| rest.split_once(':'))
            .is_some_and(|(kind, id)| kind == device_type && is_device_id(id))
    })
}

/// The CPU of the task `device` belongs to: its `/device:<TYPE>:<n>` part
/// replaced by `/device:CPU:0`.
pub fn cpu_of(device: &str, device_type: &str) -> String {
    device
        .split('/')
        .map(|part| {
            let ours = part
                .strip_prefix("device:")
                .and_then(|rest| rest.split_once(':'))
                .is_some_and(|(kind, _)| kind == device_type);
            if ours { "device:CPU:0" } else { part }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn is_device_id(id: &str) -> bool {
    id == "*" || (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::is_ours;

    #[test]
    fn full_and_short_names_match() {
        assert!(is_ours(
            "/job:localhost/replica:0/task:0/device:FPGA:0",
            "FPGA"
        ));
        assert!(is_ours("/device:FPGA:12", "FPGA"));
        assert!(is_ours("/job:worker/device:FPGA:*", "FPGA"));
    }

    #[test]
    fn other_devices_do_not_match() {
        for device in [
            "",
            "/job:localhost/replica:0/task:0/device:CPU:0",
            "/device:GPU:0",
            "/device:FPGA_X:0",
            "/device:FPGA:",
            "/device:FPGA:a",
            "/device:fpga",
            "FPGA:0",
        ] {
            assert!(!is_ours(device, "FPGA"), "{device}");
        }
    }
}
