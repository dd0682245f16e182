use cutile::prelude::*;

use crate::kernel::vector_add;
#[cfg_attr(all(), no_mangle)]
pub fn getenv() {}
pub fn run() -> Result<(), String> {
    Ok(())
}
