//! `tensorplug-host-bridge`: the TensorFlow plugin. Not yet implemented: see
//! issue 5.
