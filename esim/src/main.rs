//! `esim`: replay a workload trace through a scheduling policy. See `esim --help`.

fn main() -> std::process::ExitCode {
    esim::main()
}
