// Port of examples/silu_and_mul.py `silu_and_mul_kernel`: out = silu(x[:, :n]) * x[:, n:]. The reference slices
// one (M, 2N) input into two views; here the same input is read through one (TILE_M, TILE_N) partition at column
// tile `col` (gate) and `col + n / TILE_N` (up), which equals the sliced view when n is a multiple of TILE_N
// (the spec's variants say so). Math in f32, result cast to out's dtype.
#[cutile::module]
pub mod silu_and_mul {
    use cutile::core::*;

    #[cutile::entry()]
    fn silu_and_mul<E: ElementType, const TILE_M: i32, const TILE_N: i32>(
        x: &Tensor<E, { [-1, -1] }>,
        out: &mut Tensor<E, { [TILE_M, TILE_N] }>,
        n: i32,
    ) {
        let row_block: i32 = program_id(0);
        let col_block: i32 = program_id(1);
        let tiles: Partition<E, { [TILE_M, TILE_N] }> = x.partition(shape![TILE_M, TILE_N]);
        let up_offset: i32 = n / TILE_N;
        let gate: Tile<E, { [TILE_M, TILE_N] }> = tiles.load([row_block, col_block]);
        let up: Tile<E, { [TILE_M, TILE_N] }> = tiles.load([row_block, col_block + up_offset]);
        let gate: Tile<f32, { [TILE_M, TILE_N] }> = convert_tile(gate);
        let up: Tile<f32, { [TILE_M, TILE_N] }> = convert_tile(up);
        let one: Tile<f32, { [TILE_M, TILE_N] }> = constant(1.0f32, shape![TILE_M, TILE_N]);
        let zero: Tile<f32, { [TILE_M, TILE_N] }> = constant(0.0f32, shape![TILE_M, TILE_N]);
        let silu: Tile<f32, { [TILE_M, TILE_N] }> = gate / (one + exp(zero - gate));
        let result: Tile<E, { [TILE_M, TILE_N] }> = convert_tile(silu * up);
        out.store(result);
    }
}
