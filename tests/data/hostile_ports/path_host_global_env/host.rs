use cutile::prelude::*;

use crate::kernel::vector_add;
pub fn run() -> Result<(), String> {
    let _ = ::std::env::set_var("LD_PRELOAD", "x");
    Ok(())
}
