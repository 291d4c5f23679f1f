//! [`Failure`]: why a kernel could not run, as the `TF_Code` and cause TF
//! reports to Python (`tf.errors.*Error`).

use crate::error::Error;
use tensorplug_abi::tf::{self, TF_Code};

/// A kernel failure: the status code and what went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The code Python sees (`InvalidArgumentError`, `InternalError`, …).
    pub code: TF_Code,
    /// The cause, without the op prefix.
    pub cause: String,
}

impl Failure {
    /// Bad shapes or attributes from the graph (`InvalidArgumentError`).
    pub fn invalid(cause: impl Into<String>) -> Self {
        Self {
            code: tf::TF_INVALID_ARGUMENT,
            cause: cause.into(),
        }
    }

    /// Valid for TF, not supported on the device (`UnimplementedError`).
    pub fn unimplemented(cause: impl Into<String>) -> Self {
        Self {
            code: tf::TF_UNIMPLEMENTED,
            cause: cause.into(),
        }
    }

    /// Too little device memory (`ResourceExhaustedError`).
    pub fn exhausted(cause: impl Into<String>) -> Self {
        Self {
            code: tf::TF_RESOURCE_EXHAUSTED,
            cause: cause.into(),
        }
    }

    /// A TF call failed: its code and message.
    pub fn from_tf(what: &str, (code, message): (TF_Code, String)) -> Self {
        Self {
            code,
            cause: format!("{what}: {message}"),
        }
    }

    /// The message TF shows: `<TYPE> <op> '<node>': <cause>` (a cause that
    /// already starts with that prefix, a device incident of this very op,
    /// is shown as it is).
    pub fn message(&self, op: &str, node: &str) -> String {
        let device = crate::identity::device_type();
        let prefix = format!("{device} {op} '{node}': ");
        if self.cause.starts_with(&prefix) {
            return self.cause.clone();
        }
        format!("{prefix}{}", self.cause)
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self {
            code: error.code(),
            cause: error.to_string(),
        }
    }
}

/// Result of kernel code.
pub type KernelResult<T> = Result<T, Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_op_the_node_and_the_cause() {
        let failure = Failure::unimplemented("reducing axis 0 of [2, 3, 4]");
        assert_eq!(failure.code, tf::TF_UNIMPLEMENTED);
        assert_eq!(
            failure.message("Sum", "model/sum"),
            "FPGA Sum 'model/sum': reducing axis 0 of [2, 3, 4]"
        );
        let timeout = Failure::from(Error::Timeout {
            device: "FPGA:0 (sim)".into(),
            what: "the op",
            timeout_ms: 2000,
            then: crate::error::RESET,
        });
        assert_eq!(timeout.code, tf::TF_DEADLINE_EXCEEDED);
        assert!(timeout.cause.contains("2000 ms"), "{}", timeout.cause);
        let named = Failure::invalid("FPGA Sub 'n': DEVICE_FAULT");
        assert_eq!(named.message("Sub", "n"), "FPGA Sub 'n': DEVICE_FAULT");
    }
}
