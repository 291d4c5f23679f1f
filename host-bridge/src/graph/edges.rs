//! Who reads whose output: `NodeDef.input` strings parsed into an index.

use super::proto::NodeDef;
use std::collections::HashMap;

/// One entry of `NodeDef.input`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input<'a> {
    /// `node` or `node:port`.
    Data { node: &'a str, port: u32 },
    /// `^node`.
    Control(&'a str),
    /// `node:<not a number>`: counted as a use of `node`, so a chain that
    /// contains `node` is left alone.
    Unparsed(&'a str),
}

impl<'a> Input<'a> {
    /// Parses one input string.
    pub fn parse(text: &'a str) -> Self {
        if let Some(node) = text.strip_prefix('^') {
            return Self::Control(node);
        }
        match text.split_once(':') {
            Some((node, port)) => match port.parse() {
                Ok(port) => Self::Data { node, port },
                Err(_) => Self::Unparsed(node),
            },
            None => Self::Data {
                node: text,
                port: 0,
            },
        }
    }

    /// The node this input refers to.
    pub fn node(self) -> &'a str {
        match self {
            Self::Data { node, .. } | Self::Control(node) | Self::Unparsed(node) => node,
        }
    }
}

/// One use of a node's output (or a control edge from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Use {
    /// Index of the consuming node in `GraphDef.node`.
    pub consumer: usize,
    /// Position in the consumer's `input` list.
    pub slot: usize,
    /// `Some(port)` for a data edge, `None` for a control (or unparsable) edge.
    pub port: Option<u32>,
}

/// Every use of every node, by producer name.
pub struct Uses<'a> {
    by_producer: HashMap<&'a str, Vec<Use>>,
}

impl<'a> Uses<'a> {
    /// Indexes the inputs of `nodes`.
    pub fn index(nodes: &'a [NodeDef]) -> Self {
        let mut by_producer: HashMap<&str, Vec<Use>> = HashMap::new();
        for (consumer, node) in nodes.iter().enumerate() {
            for (slot, text) in node.input.iter().enumerate() {
                let input = Input::parse(text);
                let port = match input {
                    Input::Data { port, .. } => Some(port),
                    Input::Control(_) | Input::Unparsed(_) => None,
                };
                by_producer.entry(input.node()).or_default().push(Use {
                    consumer,
                    slot,
                    port,
                });
            }
        }
        Self { by_producer }
    }

    /// The uses of `producer` (empty if nothing reads it).
    pub fn of(&self, producer: &str) -> &[Use] {
        self.by_producer.get(producer).map_or(&[], Vec::as_slice)
    }

    /// The only use of `producer`, if it has exactly one and that use reads
    /// output 0 as the consumer's first input.
    pub fn sole_first_input(&self, producer: &str) -> Option<usize> {
        match self.of(producer) {
            [only] if only.port == Some(0) && only.slot == 0 => Some(only.consumer),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Input;

    #[test]
    fn parses_data_control_and_ports() {
        assert_eq!(Input::parse("a"), Input::Data { node: "a", port: 0 });
        assert_eq!(Input::parse("a:0"), Input::Data { node: "a", port: 0 });
        assert_eq!(Input::parse("a:3"), Input::Data { node: "a", port: 3 });
        assert_eq!(Input::parse("^a"), Input::Control("a"));
        assert_eq!(Input::parse("a:x"), Input::Unparsed("a"));
        assert_eq!(Input::parse(""), Input::Data { node: "", port: 0 });
    }
}
