//! A shared library that exports a C function and no esched root module: the loader must say
//! "not an esched policy", not "not a shared library".

/// Something for the library to export.
#[no_mangle]
pub extern "C" fn esched_test_notpolicy_answer() -> u32 {
    42
}
