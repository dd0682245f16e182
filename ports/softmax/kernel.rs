// Port of examples/softmax.py `softmax_row_kernel`: one block per row, one view load padded with -inf so the
// tail past N contributes exp(-inf) = 0, max / exp / sum / divide in f32, cast back to the output dtype.
// FUSE_SCALE is a structural variant in the reference (a constant branch), so it is a second entry here.
#[cutile::module]
pub mod softmax {
    use cutile::core::*;

    #[cutile::entry()]
    fn softmax_row<E: ElementType, const TILE_N: i32>(
        x: &Tensor<E, { [-1, -1] }>,
        out: &mut Tensor<E, { [1, TILE_N] }>,
    ) {
        let row: i32 = program_id(0);
        // SAFETY: x is read-only in this kernel; no write precedes the load.
        let rows_in: Partition<E, { [1, TILE_N] }> = unsafe {
            make_partition_view(x, shape![1, TILE_N], padding::NegInf, dim_map::Identity, x.token())
        };
        let t: Tile<E, { [1, TILE_N] }> = rows_in.load([row, 0i32]);
        let t: Tile<f32, { [1, TILE_N] }> = convert_tile(t);
        let row_max: Tile<f32, { [1] }> = reduce_max(t, 1i32);
        let row_max: Tile<f32, { [1, TILE_N] }> = row_max.reshape(shape![1, 1]).broadcast(shape![1, TILE_N]);
        let e: Tile<f32, { [1, TILE_N] }> = exp(t - row_max);
        let denom: Tile<f32, { [1] }> = reduce_sum(e, 1i32);
        let denom: Tile<f32, { [1, TILE_N] }> = denom.reshape(shape![1, 1]).broadcast(shape![1, TILE_N]);
        let y: Tile<E, { [1, TILE_N] }> = convert_tile(e / denom);
        out.store(y);
    }

    #[cutile::entry()]
    fn softmax_row_scaled<E: ElementType, const TILE_N: i32>(
        x: &Tensor<E, { [-1, -1] }>,
        out: &mut Tensor<E, { [1, TILE_N] }>,
        scale: f32,
    ) {
        let row: i32 = program_id(0);
        // SAFETY: x is read-only in this kernel; no write precedes the load.
        let rows_in: Partition<E, { [1, TILE_N] }> = unsafe {
            make_partition_view(x, shape![1, TILE_N], padding::NegInf, dim_map::Identity, x.token())
        };
        let t: Tile<E, { [1, TILE_N] }> = rows_in.load([row, 0i32]);
        let t: Tile<f32, { [1, TILE_N] }> = convert_tile(t);
        let t: Tile<f32, { [1, TILE_N] }> = t * scale.broadcast(shape![1, TILE_N]);
        let row_max: Tile<f32, { [1] }> = reduce_max(t, 1i32);
        let row_max: Tile<f32, { [1, TILE_N] }> = row_max.reshape(shape![1, 1]).broadcast(shape![1, TILE_N]);
        let e: Tile<f32, { [1, TILE_N] }> = exp(t - row_max);
        let denom: Tile<f32, { [1] }> = reduce_sum(e, 1i32);
        let denom: Tile<f32, { [1, TILE_N] }> = denom.reshape(shape![1, 1]).broadcast(shape![1, TILE_N]);
        let y: Tile<E, { [1, TILE_N] }> = convert_tile(e / denom);
        out.store(y);
    }
}
