//! `kernelpair harness draft` and `harness check`.

use super::HarnessCommand;

pub fn run(cmd: HarnessCommand) -> anyhow::Result<u8> {
    match cmd {
        HarnessCommand::Check { file, .. } => {
            let h = super::load(&file)?;
            println!("{}: ok ({} size sets)", h.origin, h.size_sets().len());
            Ok(crate::exit::OK)
        }
        HarnessCommand::Draft { .. } => anyhow::bail!("harness draft is not implemented yet"),
    }
}
