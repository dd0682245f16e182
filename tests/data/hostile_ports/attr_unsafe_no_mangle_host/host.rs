use cutile::prelude::*;

use crate::kernel::vector_add;
#[unsafe(no_mangle)]
pub extern "C" fn malloc(_n: usize) -> *mut u8 { std::ptr::null_mut() }
pub fn run() -> Result<(), String> {
    Ok(())
}
