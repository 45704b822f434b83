//! `esim`: replay a workload trace through a scheduling policy. See `esim --help`.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    esim::main()
}
