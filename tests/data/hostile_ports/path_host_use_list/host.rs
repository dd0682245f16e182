use std::{fs, io};
use cutile::prelude::*;

use crate::kernel::vector_add;
pub fn run() -> Result<(), String> {
    Ok(())
}
