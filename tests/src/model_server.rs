//! `tensorplug-model-server` in a second process, as the `pcie:` and
//! `tcp:` device kinds reach it.

/// The model in a second process, behind a shared-memory BAR file or the
/// link protocol on a loopback port; stopped (stdin closed, then killed) on
/// drop.
pub struct ModelServer {
    child: std::process::Child,
    /// The BAR file (empty for a link server).
    pub file: std::path::PathBuf,
    /// What the server printed after `ready ` (the file, or `tcp:<addr>`).
    pub ready: String,
}

impl ModelServer {
    /// A shared-memory BAR file named after `name`: the device item is
    /// `pcie:<file>`.
    pub fn start(name: &str) -> Self {
        let file = std::env::temp_dir().join(format!("{name}-{}.bar", std::process::id()));
        let mut command = std::process::Command::new(build_model_server());
        command
            .arg(&file)
            .args(["--create", "--memory", &(256u64 << 20).to_string()])
            .args(["--dma", &(8u64 << 20).to_string()]);
        Self::spawn(command, file)
    }

    /// `--link tcp:127.0.0.1:0`: the port the server picked is in `ready`.
    pub fn start_link() -> Self {
        let mut command = std::process::Command::new(build_model_server());
        command
            .args(["--link", "tcp:127.0.0.1:0"])
            .args(["--memory", &(256u64 << 20).to_string()]);
        Self::spawn(command, std::path::PathBuf::new())
    }

    fn spawn(mut command: std::process::Command, file: std::path::PathBuf) -> Self {
        use std::io::BufRead;
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("cannot start tensorplug-model-server");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut first = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut first)
            .expect("model server stdout");
        let ready = first
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("model server said {first:?}"))
            .trim()
            .to_string();
        Self { child, file, ready }
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.file.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.file);
        }
    }
}

/// `tensorplug-model-server`: `TENSORPLUG_MODEL_SERVER` if set, otherwise
/// built into the helpers' target dir.
pub fn build_model_server() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("TENSORPLUG_MODEL_SERVER") {
        return crate::given_artifact(path.into());
    }
    let target = crate::helper_target_dir();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "-p", "tensorplug-model-fpga", "--features", "std"])
        .args(["--bin", "tensorplug-model-server"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(crate::workspace_root())
        .status()
        .expect("cannot run cargo");
    assert!(status.success(), "building tensorplug-model-server failed");
    target.join("debug/tensorplug-model-server")
}

impl ModelServer {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops (SIGSTOP) or resumes (SIGCONT) it: a device that freezes.
    pub fn freeze(&self, frozen: bool) {
        let signal = if frozen { "-STOP" } else { "-CONT" };
        let _ = std::process::Command::new("kill")
            .arg(signal)
            .arg(self.pid().to_string())
            .status();
    }

    /// Kills it (SIGKILL) and reaps it: a device that dies.
    pub fn kill(&mut self) {
        self.freeze(false);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
