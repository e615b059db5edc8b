//! The blindmatch matching server; see `docs/API.md`.

fn main() -> std::process::ExitCode {
    blindmatch::server::main()
}
