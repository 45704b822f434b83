//! esubmit's `-t/--time` and `--begin` parsers (also eacct's `-S/-E`) on arbitrary text, at an
//! arbitrary "now" and time-zone offset: a value or a one-line error, never a panic or an
//! overflow; a parsed limit is positive.
#![no_main]

use cli_tools::batch::time::{fixed_zone, parse_acct_time, parse_begin, parse_time_limit, TimeLimit};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u64, i32, &str)| {
    let (now, offset, text) = input;
    // Instants esubmit can meet: from the epoch to the year 9999, offsets within ±26 h.
    let now = now % 253_402_300_800_000;
    let zone = fixed_zone(offset % (26 * 3600));
    match parse_time_limit(text) {
        Ok(TimeLimit::Limited(ms)) => assert!(ms > 0),
        Ok(TimeLimit::Unlimited) => {}
        Err(e) => assert!(!e.to_string().contains('\n')),
    }
    if let Err(e) = parse_begin(text, now, &zone) {
        assert!(!e.to_string().contains('\n'));
    }
    if let Err(e) = parse_acct_time(text, now, &zone) {
        assert!(!e.to_string().contains('\n'));
    }
});
