extern crate proc_macro;
use cutile::prelude::*;

use crate::kernel::vector_add;
pub fn run() -> Result<(), String> {
    Ok(())
}
