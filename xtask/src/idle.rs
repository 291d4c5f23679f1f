//! A build that runs on CPU time nothing else wants: started paused under
//! Linux's `SCHED_IDLE` policy, let run beside a test that keeps a core
//! free (the kernel gives it a core only when no other task wants that
//! core, and takes it back at once when one wakes), and raised to an
//! ordinary priority when the steps that need it begin (`docs/ci.md`).

use anyhow::{Context, Result, bail};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// A command running in a process group of its own, its output in a log.
pub struct IdleBuild {
    what: String,
    child: Child,
    log: PathBuf,
    started: Instant,
    /// Whether [`Self::raise`] made it `SCHED_OTHER`.
    raised: std::cell::Cell<bool>,
    waited: bool,
}

/// A run that fails before its step leaves no build behind.
impl Drop for IdleBuild {
    fn drop(&mut self) {
        if !self.waited {
            self.resume();
            self.signal("-TERM");
            let _ = self.child.wait();
        }
    }
}

impl IdleBuild {
    /// Starts `cmd` under `chrt --idle 0`, in a new process group, its
    /// output to `log`, and stops it at once: [`Self::resume`] lets it run.
    pub fn start_paused(what: &str, cmd: &Command, log: &Path) -> Result<Self> {
        let file =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let mut idle = Command::new("chrt");
        idle.args(["--idle", "0"])
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file);
        if let Some(dir) = cmd.get_current_dir() {
            idle.current_dir(dir);
        }
        for (key, value) in cmd.get_envs() {
            match value {
                Some(value) => idle.env(key, value),
                None => idle.env_remove(key),
            };
        }
        let child = idle
            .spawn()
            .with_context(|| format!("starting {what} under chrt --idle"))?;
        eprintln!(
            "    {what}: started, paused, to run on idle CPU time (SCHED_IDLE; log: {})",
            log.display()
        );
        let build = Self {
            what: what.to_owned(),
            child,
            log: log.to_owned(),
            started: Instant::now(),
            raised: std::cell::Cell::new(false),
            waited: false,
        };
        build.pause();
        Ok(build)
    }

    /// Stops every process of the group (SIGSTOP) until [`Self::resume`].
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let _ = Command::new("kill")
            .args([signal, "--", &format!("-{}", self.child.id())])
            .status();
    }

    /// Raises the group, resumed, to `SCHED_OTHER` at `nice`: from then on
    /// it shares the CPU like the steps that run at that priority.
    pub fn raise(&self, nice: i32) {
        self.raised.set(true);
        self.resume();
        // A task cargo forks while the first pass runs may still be idle.
        for _ in 0..3 {
            let idle: Vec<u32> = tasks_of_group(self.child.id())
                .into_iter()
                .filter(|&tid| policy(tid) == Some(SCHED_IDLE))
                .collect();
            if idle.is_empty() {
                break;
            }
            for tid in idle {
                let _ = Command::new("chrt")
                    .args(["--other", "-p", "0", &tid.to_string()])
                    .stdout(Stdio::null())
                    .status();
            }
        }
        let _ = Command::new("renice")
            .args(["-n", &nice.to_string(), "-g", &self.child.id().to_string()])
            .stdout(Stdio::null())
            .status();
    }

    /// Waits for it (raised first, to nice 0, unless [`Self::raise`] was
    /// called) and fails, with the end of its log, if it did.
    pub fn finish(mut self) -> Result<()> {
        if !self.raised.get() {
            self.raise(0);
        }
        let waited = Instant::now();
        let status = self.child.wait().context("waiting for the idle build")?;
        self.waited = true;
        eprintln!(
            "    {}: {status} after {:.1}s, {:.1}s of it waited for here",
            self.what,
            self.started.elapsed().as_secs_f64(),
            waited.elapsed().as_secs_f64()
        );
        if !status.success() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            bail!(
                "{} failed ({status}):\n{}",
                self.what,
                crate::util::tail(&text, 60)
            );
        }
        Ok(())
    }
}

/// `sched_setscheduler`'s `SCHED_IDLE`.
const SCHED_IDLE: u32 = 5;

/// Every thread of every process whose process group is `pgid`.
fn tasks_of_group(pgid: u32) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut tasks = Vec::new();
    for pid in procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
    {
        if stat_field(&format!("/proc/{pid}/stat"), 5) != Some(pgid) {
            continue;
        }
        if let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            tasks.extend(
                threads
                    .flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()),
            );
        }
    }
    tasks
}

/// A task's scheduling policy (`/proc/<tid>/stat`, field 41).
fn policy(tid: u32) -> Option<u32> {
    stat_field(&format!("/proc/{tid}/stat"), 41)
}

/// Field `n` (1-based, as `proc(5)` numbers them) of a `stat` file; the
/// command name (field 2) may hold spaces, so fields count after its `)`.
fn stat_field(path: &str, n: usize) -> Option<u32> {
    let text = std::fs::read_to_string(path).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(n.checked_sub(3)?)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_is_found_in_its_own_group_with_its_policy() {
        let me = std::process::id();
        let pgid = super::stat_field(&format!("/proc/{me}/stat"), 5).expect("our pgid");
        assert!(super::tasks_of_group(pgid).contains(&me));
        assert_eq!(super::policy(me), Some(0), "SCHED_OTHER");
    }

    #[test]
    fn a_command_runs_idle_and_its_failure_is_reported() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let log = dir.path().join("ok.log");
        let mut ok = std::process::Command::new("sh");
        ok.args(["-c", "chrt -p $$"]);
        let build = super::IdleBuild::start_paused("ok", &ok, &log).expect("start");
        build.resume();
        // `finish` raises it: read what it said before.
        let mut said = String::new();
        for _ in 0..100 {
            said = std::fs::read_to_string(&log).expect("its log");
            if said.contains("priority") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        build.finish().expect("it passed");
        assert!(said.contains("SCHED_IDLE"), "{said}");
        let mut bad = std::process::Command::new("sh");
        bad.args(["-c", "echo broken; exit 3"]);
        let build = super::IdleBuild::start_paused("bad", &bad, &dir.path().join("bad.log"))
            .expect("start");
        let err = build.finish().expect_err("it failed").to_string();
        assert!(err.contains("broken"), "{err}");
    }
}
