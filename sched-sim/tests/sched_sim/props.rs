//! Property tests of the real policies; written once the policy crates exist.
