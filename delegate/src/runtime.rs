//! Which TFLite runtime loaded the delegate, read from the files the
//! process maps: TF's `tf.lite.Interpreter` (the version of the TF wheel
//! beside it) or ai-edge-litert's. Only to choose how int8
//! `FULLY_CONNECTED` rounds, which differs between them (measured:
//! `docs/delegate.md`, "int8"); nothing else depends on it.

use std::path::Path;
use tensorplug_core::quant::Rounding;

/// A runtime and its version, as its package names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Runtime {
    Tensorflow(String),
    Litert(String),
}

/// The first TF minor version whose reference int8 `FULLY_CONNECTED`
/// rounds once (measured: 2.15.1, 2.16.2, 2.17.1, 2.18.1 and 2.19.1
/// twice; 2.20.0 and 2.21.0 once).
const TF_SINGLE_FROM: (u32, u32) = (2, 20);

impl Runtime {
    /// The runtime that loaded us, if one of the two is mapped (and only
    /// one).
    pub fn detect() -> Option<Self> {
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        Self::from_maps(&maps, &|dir| {
            std::fs::read_dir(dir)
                .map(|entries| {
                    entries
                        .filter_map(|e| e.ok()?.file_name().into_string().ok())
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// [`detect`](Self::detect) over `maps` (`/proc/self/maps`'s text) and
    /// `list` (a directory's entry names).
    fn from_maps(maps: &str, list: &dyn Fn(&Path) -> Vec<String>) -> Option<Self> {
        let mut found: Option<Self> = None;
        for path in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
            let (package, prefixes, make): (&str, &[&str], fn(String) -> Self) = if path
                .contains("/tensorflow/lite/python/")
                && path.contains("interpreter_wrapper")
            {
                (
                    "/tensorflow/",
                    &["tensorflow_cpu-", "tensorflow-"],
                    Self::Tensorflow,
                )
            } else if path.contains("/ai_edge_litert/") {
                ("/ai_edge_litert/", &["ai_edge_litert-"], Self::Litert)
            } else {
                continue;
            };
            let site = Path::new(&path[..path.find(package)?]);
            let version = list(site).into_iter().find_map(|name| {
                let rest = name.strip_suffix(".dist-info")?;
                prefixes
                    .iter()
                    .find_map(|p| rest.strip_prefix(p))
                    .map(str::to_owned)
            })?;
            let runtime = make(version);
            match &found {
                Some(other) if *other != runtime => return None,
                _ => found = Some(runtime),
            }
        }
        found
    }

    /// How its reference int8 `FULLY_CONNECTED` requantizes.
    pub fn fc_rounding(&self) -> Rounding {
        match self {
            Self::Tensorflow(v) => {
                let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
                let minor = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
                match minor < TF_SINGLE_FROM {
                    true => Rounding::Double,
                    false => Rounding::Single,
                }
            }
            Self::Litert(_) => Rounding::Single,
        }
    }
}

impl std::fmt::Display for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tensorflow(v) => write!(f, "TF {v}'s tf.lite.Interpreter"),
            Self::Litert(v) => write!(f, "ai-edge-litert {v}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TF: &str = "7f00-7f10 r-xp 00000000 08:01 42 /v/lib/python3.11/site-packages/tensorflow/lite/python/interpreter_wrapper/_pywrap_tensorflow_interpreter_wrapper.so\n";
    const LITERT: &str = "7f20-7f30 r-xp 00000000 08:01 43 /w/site-packages/ai_edge_litert/_pywrap_litert_interpreter_wrapper.so\n";

    fn listing(dir: &Path) -> Vec<String> {
        match dir.to_str() {
            Some("/v/lib/python3.11/site-packages") => {
                vec![
                    "numpy-2.1.0.dist-info".into(),
                    "tensorflow_cpu-2.17.1.dist-info".into(),
                ]
            }
            Some("/w/site-packages") => vec!["ai_edge_litert-2.3.0.dist-info".into()],
            _ => Vec::new(),
        }
    }

    #[test]
    fn the_runtime_and_its_version_come_from_the_mapped_wrapper_and_the_dist_info() {
        let tf = Runtime::from_maps(TF, &listing);
        assert_eq!(tf, Some(Runtime::Tensorflow("2.17.1".into())));
        assert_eq!(tf.unwrap().fc_rounding(), Rounding::Double);
        let litert = Runtime::from_maps(LITERT, &listing).unwrap();
        assert_eq!(litert, Runtime::Litert("2.3.0".into()));
        assert_eq!(litert.fc_rounding(), Rounding::Single);
        assert_eq!(
            Runtime::Tensorflow("2.21.0".into()).fc_rounding(),
            Rounding::Single
        );
        assert_eq!(
            Runtime::Tensorflow("2.20.0".into()).fc_rounding(),
            Rounding::Single
        );
        assert_eq!(
            Runtime::Tensorflow("2.19.1".into()).fc_rounding(),
            Rounding::Double
        );
        // Both mapped, or neither: not known.
        assert_eq!(Runtime::from_maps(&format!("{TF}{LITERT}"), &listing), None);
        assert_eq!(
            Runtime::from_maps("7f00-7f10 r-xp 0 0 0 /usr/lib/libc.so.6\n", &listing),
            None
        );
    }
}
