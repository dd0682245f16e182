// Port of examples/matmul.py `matmul_kernel`: each block owns one (TILE_M, TILE_N) tile of c and walks K in
// TILE_K steps with zero-padded view loads and a float32 MMA accumulator; the result is cast to c's dtype.
// The reference's two tile configurations (128x128x64, 64x64x32) are two variants of this one entry.
#[cutile::module]
pub mod matmul {
    use cutile::core::*;

    #[cutile::entry()]
    fn matmul<E: ElementType, const TILE_M: i32, const TILE_N: i32, const TILE_K: i32>(
        a: &Tensor<E, { [-1, -1] }>,
        b: &Tensor<E, { [-1, -1] }>,
        c: &mut Tensor<E, { [TILE_M, TILE_N] }>,
    ) {
        let pid_m: i32 = program_id(0);
        let pid_n: i32 = program_id(1);
        let a_tiles: Partition<E, { [TILE_M, TILE_K] }> = a.partition(shape![TILE_M, TILE_K]);
        let b_tiles: Partition<E, { [TILE_K, TILE_N] }> = b.partition(shape![TILE_K, TILE_N]);
        let num_k: i32 = num_tiles(&a_tiles, 1i32);
        let mut acc: Tile<f32, { [TILE_M, TILE_N] }> = constant(0.0f32, shape![TILE_M, TILE_N]);
        for k in 0i32..num_k {
            let a_tile: Tile<E, { [TILE_M, TILE_K] }> = a_tiles.load([pid_m, k]);
            let b_tile: Tile<E, { [TILE_K, TILE_N] }> = b_tiles.load([k, pid_n]);
            acc = mma(a_tile, b_tile, acc);
        }
        let result: Tile<E, { [TILE_M, TILE_N] }> = convert_tile(acc);
        c.store(result);
    }
}
