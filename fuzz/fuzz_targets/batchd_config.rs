//! batchd's TOML configuration on arbitrary text: a config or a one-line error, never a panic.
//!
//! The module is batchd's own source file, compiled in here: depending on the batchd crate would
//! build its bundled SQLite under the sanitizer, which this target never calls.
#![no_main]

#[allow(dead_code)]
#[path = "../../batchd/src/config.rs"]
mod config;

use config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // batchd prints a config error as its one line of output before exiting.
    if let Err(e) = Config::parse(text, "fuzz.toml") {
        let msg = e.to_string();
        assert!(!msg.is_empty());
        assert!(!msg.contains('\n'), "a config error of several lines: {msg:?}");
    }
});
