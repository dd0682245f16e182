use cutile::prelude::*;

use crate::kernel::vector_add;
pub fn run() -> Result<(), String> {
    println!("{}", env!("HOME"));
    Ok(())
}
