//! The per-device completion thread: runs host-side work (TF host
//! callbacks, timer stamps) once the device fence it follows has completed.
//!
//! Items run in the order they were submitted (one FIFO per device). The
//! thread exits when the device is dropped (the channel closes).

use super::device_core::DeviceCore;
use crate::error::Result;
use crate::ffi;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use tensorplug_core::accelerator::Fence;

/// Host work to run after `fence` (or at once when `None`); it receives the
/// outcome of the wait.
pub struct Completion {
    /// What must complete first.
    pub fence: Option<Fence>,
    /// The work.
    pub run: Box<dyn FnOnce(Result<()>) + Send>,
}

/// Submits [`Completion`]s to the device's completion thread.
pub struct CompletionWorker {
    sender: Mutex<Sender<Completion>>,
}

impl CompletionWorker {
    /// Starts the thread for `core`.
    pub fn start(core: Arc<DeviceCore>) -> std::io::Result<Self> {
        let (sender, receiver) = channel::<Completion>();
        let name = format!("tensorplug {}", core.label());
        std::thread::Builder::new().name(name).spawn(move || {
            for item in receiver {
                // A panic while waiting becomes the item's error, so the
                // callback still runs and the thread lives on.
                let outcome = match item.fence {
                    Some(fence) => ffi::run("completion thread", || {
                        core.wait(fence, "work before a host callback")
                    }),
                    None => Ok(()),
                };
                // A panic in our part of an item must not kill the thread.
                ffi::swallow("completion thread", (), || {
                    (item.run)(outcome);
                    Ok(())
                });
            }
        })?;
        Ok(Self {
            sender: Mutex::new(sender),
        })
    }

    /// Queues `item`. If the thread is gone (it never exits while the
    /// device lives), the item runs here with an error so nothing is lost.
    pub fn submit(&self, item: Completion) {
        let sent = self
            .sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(item);
        if let Err(returned) = sent {
            let item = returned.0;
            (item.run)(Err(crate::error::Error::Internal(
                "the device's completion thread has stopped".into(),
            )));
        }
    }
}
