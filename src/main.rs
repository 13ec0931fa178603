fn main() -> std::process::ExitCode {
    kernelpair::cli::main()
}
