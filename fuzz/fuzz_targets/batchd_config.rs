//! batchd's TOML configuration on arbitrary text: a config or a one-line error, never a panic.
#![no_main]

use batchd::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = Config::parse(text, "fuzz.toml") {
        let msg = e.to_string();
        assert!(!msg.is_empty());
    }
});
