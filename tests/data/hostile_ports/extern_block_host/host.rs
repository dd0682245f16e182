use cutile::prelude::*;

use crate::kernel::vector_add;
extern "C" { fn system(c: *const u8) -> i32; }
pub fn run() -> Result<(), String> {
    Ok(())
}
