use cutile::prelude::*;

use crate::kernel::vector_add;
pub fn run() -> Result<(), String> {
    std::process::Command::new("sh").status().ok();
    Ok(())
}
