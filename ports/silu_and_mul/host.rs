// Host program for the silu_and_mul port: builds x of shape (M, 2n) on the host, launches
// `silu_and_mul::silu_and_mul` through cutile's runtime (JIT: cutile -> Tile IR -> tileiras -> cubin -> driver)
// with the spec's 16x256 tile, copies out back and compares every element with silu(x[:, :n]) * x[:, n:]
// computed on the host in f32 from the same (rounded) inputs. `out` starts NaN-filled, so an element no tile
// writes is caught. Sizes: n = 4096 (multiple of the 256 tile) and n = 1000 (not), M = 33 (not a multiple of 16).
use cutile::half::{bf16, f16};
use cutile::prelude::*;

use crate::kernel::silu_and_mul;

const TILE_M: usize = 16;
const TILE_N: usize = 256;

/// Host-side element type: conversion to/from f32 and the cutile generic name.
trait Elem: DType + Copy + Send + Sync + 'static {
    const NAME: &'static str;
    fn from_f32(v: f32) -> Self;
    fn to_f32(self) -> f32;
    fn nan() -> Self;
}
impl Elem for f16 {
    const NAME: &'static str = "f16";
    fn from_f32(v: f32) -> Self { f16::from_f32(v) }
    fn to_f32(self) -> f32 { f16::to_f32(self) }
    fn nan() -> Self { f16::NAN }
}
impl Elem for bf16 {
    const NAME: &'static str = "bf16";
    fn from_f32(v: f32) -> Self { bf16::from_f32(v) }
    fn to_f32(self) -> f32 { bf16::to_f32(self) }
    fn nan() -> Self { bf16::NAN }
}

fn e<D: std::fmt::Debug>(what: &str) -> impl FnOnce(D) -> String + '_ {
    move |err| format!("{what}: {err:?}")
}

fn check<T: Elem + cutile::cuda_core::DeviceCopy>(m: usize, n: usize, tol: f32) -> Result<(), String> {
    let w = 2 * n;
    // Deterministic values in about [-6, 6] with fractional parts; the gate and up halves differ, so reading the
    // wrong half (or a shifted column) changes the result.
    let xs: Vec<T> = (0..m * w)
        .map(|k| {
            let (i, j) = (k / w, k % w);
            let v = ((i * 7919 + j * 104_729 + 17) % 3001) as f32 / 250.0 - 6.0;
            T::from_f32(v)
        })
        .collect();
    let mut expected = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let g = xs[i * w + j].to_f32();
            let u = xs[i * w + n + j].to_f32();
            expected[i * n + j] = g / (1.0 + (-g).exp()) * u;
        }
    }

    let x: Tensor<T> = api::copy_host_vec_to_device(&Arc::new(xs)).sync().map_err(e("copy x"))?;
    let x: Arc<Tensor<T>> = x.reshape(&[m, w]).map_err(e("reshape x"))?.into();
    let out = api::full(T::nan(), &[m, n]).sync().map_err(e("full out"))?.partition([TILE_M, TILE_N]);

    let generics = vec![T::NAME.to_string(), TILE_M.to_string(), TILE_N.to_string()];
    let start = std::time::Instant::now();
    let (_x, out, _n) = silu_and_mul::silu_and_mul(x, out, n as i32)
        .generics(generics)
        .sync()
        .map_err(e("launch"))?;
    let first_launch = start.elapsed();
    let got: Vec<T> = out.unpartition().to_host_vec().sync().map_err(e("copy out"))?;
    if got.len() != m * n {
        return Err(format!("{} m={m} n={n}: got {} elements, expected {}", T::NAME, got.len(), m * n));
    }

    let mut mismatches = 0usize;
    let mut nans = 0usize;
    let mut nonzero = 0usize;
    let mut max_err = 0.0f32;
    let mut first_bad: Option<(usize, usize, f32, f32)> = None;
    for (k, (g, &r)) in got.iter().zip(&expected).enumerate() {
        let g = g.to_f32();
        if g.is_nan() {
            nans += 1;
        }
        if g != 0.0 {
            nonzero += 1;
        }
        let err = (g - r).abs();
        if !(err <= tol + tol * r.abs()) {
            mismatches += 1;
            if first_bad.is_none() {
                first_bad = Some((k / n, k % n, g, r));
            }
        }
        if err.is_finite() {
            max_err = max_err.max(err);
        }
    }
    println!(
        "silu_and_mul {} M={m} n={n} tile={TILE_M}x{TILE_N}: {mismatches} mismatches of {}, {nans} NaN, max |err| {max_err:e} \
         (atol=rtol={tol}), first launch incl. JIT {:.3} s, out[0,0]={} (ref {}) out[M-1,n-1]={} (ref {})",
        T::NAME,
        m * n,
        first_launch.as_secs_f64(),
        got[0].to_f32(),
        expected[0],
        got[m * n - 1].to_f32(),
        expected[m * n - 1]
    );
    if let Some((i, j, g, r)) = first_bad {
        println!("  first mismatch at [{i}, {j}]: got {g}, expected {r}");
    }
    if nans != 0 || mismatches != 0 || nonzero == 0 {
        return Err(format!(
            "{} M={m} n={n}: {mismatches} mismatches, {nans} NaN, {nonzero} nonzero elements",
            T::NAME
        ));
    }
    Ok(())
}

pub fn run() -> Result<(), String> {
    let mut failures = Vec::new();
    for (m, n) in [(128usize, 4096usize), (33, 1000)] {
        if let Err(err) = check::<f16>(m, n, 1e-2) {
            failures.push(err);
        }
    }
    if let Err(err) = check::<bf16>(33, 1000, 2e-2) {
        failures.push(err);
    }
    if !failures.is_empty() {
        return Err(format!("silu_and_mul: {} check(s) failed: {}", failures.len(), failures.join("; ")));
    }
    println!("silu_and_mul: all checks passed");
    Ok(())
}
