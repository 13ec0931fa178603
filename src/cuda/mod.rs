//! Tree-sitter parsing of CUDA sources and isolation of each __global__ kernel into a self-contained unit.

#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The .cu file.
    pub file: std::path::PathBuf,
    /// Only this kernel.
    #[arg(long)]
    pub kernel: Option<String>,
}

pub fn run_inspect(_args: InspectArgs) -> anyhow::Result<u8> {
    anyhow::bail!("inspect is not implemented yet")
}
