use cutile::prelude::*;

use crate::kernel::vector_add;
pub fn run() -> Result<(), String> {
    let _ = std::env::var("HOME");
    Ok(())
}
