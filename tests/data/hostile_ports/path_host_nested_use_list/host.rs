use std::{io::{self, Write}, process::Command};
use cutile::prelude::*;

use crate::kernel::vector_add;
pub fn run() -> Result<(), String> {
    Ok(())
}
