//! Process-wide claims on names, so that a second plugin with the same
//! device type finds out before TensorFlow aborts on a duplicate platform.
//!
//! Each `.so` links its own copy of this library, so a Rust static cannot
//! be seen from the other plugin. A claim is an abstract Unix socket named
//! `tensorplug.<pid>.<key>`: bound while the process lives, released by the
//! kernel when it exits, invisible to other processes' keys.

/// Claims `key` for this process: false when this process claimed it
/// already (through any plugin). Where claims cannot be made (not Linux,
/// or the socket fails for another reason) every claim succeeds.
pub fn claim(key: &str) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixListener};
        let name = format!("tensorplug.{}.{key}", std::process::id());
        let bound = SocketAddr::from_abstract_name(name.as_bytes())
            .and_then(|address| UnixListener::bind_addr(&address));
        match bound {
            Ok(listener) => {
                // Held until the process exits.
                std::mem::forget(listener);
                true
            }
            Err(error) => error.kind() != std::io::ErrorKind::AddrInUse,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = key;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::claim;

    #[test]
    fn a_key_is_claimed_once_per_process() {
        let key = "test.claim.once";
        assert!(claim(key));
        assert!(!claim(key));
        assert!(claim("test.claim.other"));
    }
}
