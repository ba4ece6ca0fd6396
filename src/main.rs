fn main() {
    std::process::exit(cordon::cli::main().exit_code());
}
