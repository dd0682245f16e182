// Host program for the vector_add port: builds inputs on the host, launches `vector_add::add` through cutile's
// runtime (JIT: cutile -> Tile IR -> tileiras -> cubin -> driver) and checks every element against x + y
// computed on the host. Run on a GPU machine with CUTILE_TILEIRAS_PATH pointing at tileiras >= 13.3.
use cutile::prelude::*;

use crate::kernel::vector_add;

fn check(n: usize, tile: usize) -> Result<(), String> {
    // Deterministic inputs with a fractional part, so a wrong index or a dropped tail is visible.
    let xs: Vec<f32> = (0..n).map(|i| ((i * 7919) % 10007) as f32 * 0.25 - 1000.0).collect();
    let ys: Vec<f32> = (0..n).map(|i| ((i * 104729) % 8191) as f32 * 0.5).collect();
    let expected: Vec<f32> = xs.iter().zip(&ys).map(|(a, b)| a + b).collect();

    let x: Arc<Tensor<f32>> = api::copy_host_vec_to_device(&Arc::new(xs)).sync().map_err(|e| format!("{e:?}"))?.into();
    let y: Arc<Tensor<f32>> = api::copy_host_vec_to_device(&Arc::new(ys)).sync().map_err(|e| format!("{e:?}"))?.into();
    let z = api::zeros::<f32>(&[n]).sync().map_err(|e| format!("{e:?}"))?.partition([tile]);

    let start = std::time::Instant::now();
    let (z, _x, _y) = vector_add::add(z, x, y).sync().map_err(|e| format!("launch: {e:?}"))?;
    let first_launch = start.elapsed();
    let got: Vec<f32> = z.unpartition().to_host_vec().sync().map_err(|e| format!("{e:?}"))?;

    if got.len() != n {
        return Err(format!("n={n}: got {} elements", got.len()));
    }
    let mismatches = got.iter().zip(&expected).filter(|(g, e)| g.to_bits() != e.to_bits()).count();
    let max_err = got.iter().zip(&expected).map(|(g, e)| (g - e).abs()).fold(0.0f32, f32::max);
    println!(
        "vector_add n={n} tile={tile}: {mismatches} mismatches of {n}, max |err| {max_err:e}, \
         first launch incl. JIT {:.3} s, z[0]={} z[n-1]={}",
        first_launch.as_secs_f64(), got[0], got[n - 1]
    );
    if mismatches != 0 {
        return Err(format!("n={n}: {mismatches} elements differ from x + y"));
    }
    Ok(())
}

pub fn run() -> Result<(), String> {
    check(1 << 20, 1024)?;
    check(1_000_003, 1024)?;
    println!("vector_add: all checks passed");
    Ok(())
}
