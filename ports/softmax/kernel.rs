// Port of examples/softmax.py `softmax_row_kernel`: one block per row, one view load padded with -inf so the
// tail past N contributes exp(-inf) = 0, max / exp / sum / divide in f32, cast back to the output dtype.
// FUSE_SCALE is a structural variant in the reference (a constant branch), so it is a second entry here.
// `softmax_chunked_kernel` (rows longer than 8192) is `softmax_chunked` / `softmax_chunked_scaled`: an online pass
// over the row's TILE_N-wide column tiles (running max, rescaled running sum), then a second pass that writes
// exp(t - max) / sum. Its output is the block's whole row, a static [1, N] slab (cutile launches an output as a
// partition whose shape is the declared one), stored tile by tile at [0, j] relative to the slab; N is the row
// length the variant was built for, and the launcher refuses any other.
//
// Speed (measured through `tileport gate` on the H200, docs/gpu-runs.md): the row kernel, as the reference compiles
// it, takes 255 registers for 256 threads, so one block fits on an SM (13 % occupancy) and rows of 1000 are bound
// by latency; there the port ran 1.20-1.25x the reference with the same launch attributes. The row entries ask
// tileiras for 4 blocks per SM (`occupancy = 4`, an optimisation hint the IR self-check reports as a warning): the
// same rows then run 0.29-0.42x the reference. The chunked entries keep the reference's defaults (occupancy 4
// made f32 n=32768 1.29x slower; spills).
#[cutile::module]
pub mod softmax {
    use cutile::core::*;

    #[cutile::entry(optimization_hints = (sm_90 = (occupancy = 4,),))]
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

    #[cutile::entry(optimization_hints = (sm_90 = (occupancy = 4,),))]
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

    #[cutile::entry()]
    fn softmax_chunked<E: ElementType, const TILE_N: i32, const N: i32>(
        x: &Tensor<E, { [-1, -1] }>,
        out: &mut Tensor<E, { [1, N] }>,
    ) {
        let row: i32 = program_id(0);
        // SAFETY: x is read-only in this kernel; no write precedes the loads.
        let cols: Partition<E, { [1, TILE_N] }> = unsafe {
            make_partition_view(x, shape![1, TILE_N], padding::NegInf, dim_map::Identity, x.token())
        };
        let n_chunks: i32 = num_tiles(&cols, 1i32);
        let mut running_max: Tile<f32, { [1, 1] }> = constant(f32::NEG_INFINITY, shape![1, 1]);
        let mut running_sum: Tile<f32, { [1, 1] }> = constant(0.0f32, shape![1, 1]);
        for j in 0i32..n_chunks {
            let t: Tile<f32, { [1, TILE_N] }> = convert_tile(cols.load([row, j]));
            let chunk_max: Tile<f32, { [1] }> = reduce_max(t, 1i32);
            let new_max: Tile<f32, { [1, 1] }> = max_tile(running_max, chunk_max.reshape(shape![1, 1]));
            let e: Tile<f32, { [1, TILE_N] }> = exp(t - new_max.broadcast(shape![1, TILE_N]));
            let chunk_sum: Tile<f32, { [1] }> = reduce_sum(e, 1i32);
            running_sum = running_sum * exp(running_max - new_max) + chunk_sum.reshape(shape![1, 1]);
            running_max = new_max;
        }
        let inv_sum: Tile<f32, { [1, 1] }> = constant(1.0f32, shape![1, 1]) / running_sum;
        let row_max: Tile<f32, { [1, TILE_N] }> = running_max.broadcast(shape![1, TILE_N]);
        let inv_sum: Tile<f32, { [1, TILE_N] }> = inv_sum.broadcast(shape![1, TILE_N]);
        let mut dst: PartitionMut<E, { [1, TILE_N] }> = out.partition_mut(shape![1, TILE_N]);
        for j in 0i32..n_chunks {
            let t: Tile<f32, { [1, TILE_N] }> = convert_tile(cols.load([row, j]));
            let y: Tile<E, { [1, TILE_N] }> = convert_tile(exp(t - row_max) * inv_sum);
            // SAFETY: j < n_chunks = ceil(n / TILE_N), and the launcher refuses a row whose length n is not N, so
            // j is inside the slab's ceil(N / TILE_N) tiles. (The checked store cannot see that n == N: it would
            // keep an assertion per store, which the reference does not have.)
            unsafe { dst.store_unchecked(y, [0i32, j]) };
        }
    }

    #[cutile::entry()]
    fn softmax_chunked_scaled<E: ElementType, const TILE_N: i32, const N: i32>(
        x: &Tensor<E, { [-1, -1] }>,
        out: &mut Tensor<E, { [1, N] }>,
        scale: f32,
    ) {
        let row: i32 = program_id(0);
        // SAFETY: x is read-only in this kernel; no write precedes the loads.
        let cols: Partition<E, { [1, TILE_N] }> = unsafe {
            make_partition_view(x, shape![1, TILE_N], padding::NegInf, dim_map::Identity, x.token())
        };
        let n_chunks: i32 = num_tiles(&cols, 1i32);
        let scale: Tile<f32, { [1, TILE_N] }> = scale.broadcast(shape![1, TILE_N]);
        let mut running_max: Tile<f32, { [1, 1] }> = constant(f32::NEG_INFINITY, shape![1, 1]);
        let mut running_sum: Tile<f32, { [1, 1] }> = constant(0.0f32, shape![1, 1]);
        for j in 0i32..n_chunks {
            let t: Tile<f32, { [1, TILE_N] }> = convert_tile(cols.load([row, j]));
            let t: Tile<f32, { [1, TILE_N] }> = t * scale;
            let chunk_max: Tile<f32, { [1] }> = reduce_max(t, 1i32);
            let new_max: Tile<f32, { [1, 1] }> = max_tile(running_max, chunk_max.reshape(shape![1, 1]));
            let e: Tile<f32, { [1, TILE_N] }> = exp(t - new_max.broadcast(shape![1, TILE_N]));
            let chunk_sum: Tile<f32, { [1] }> = reduce_sum(e, 1i32);
            running_sum = running_sum * exp(running_max - new_max) + chunk_sum.reshape(shape![1, 1]);
            running_max = new_max;
        }
        let inv_sum: Tile<f32, { [1, 1] }> = constant(1.0f32, shape![1, 1]) / running_sum;
        let row_max: Tile<f32, { [1, TILE_N] }> = running_max.broadcast(shape![1, TILE_N]);
        let inv_sum: Tile<f32, { [1, TILE_N] }> = inv_sum.broadcast(shape![1, TILE_N]);
        let mut dst: PartitionMut<E, { [1, TILE_N] }> = out.partition_mut(shape![1, TILE_N]);
        for j in 0i32..n_chunks {
            let t: Tile<f32, { [1, TILE_N] }> = convert_tile(cols.load([row, j]));
            let t: Tile<f32, { [1, TILE_N] }> = t * scale;
            let y: Tile<E, { [1, TILE_N] }> = convert_tile(exp(t - row_max) * inv_sum);
            // SAFETY: j < n_chunks = ceil(n / TILE_N), and the launcher refuses a row whose length n is not N, so
            // j is inside the slab's ceil(N / TILE_N) tiles. (The checked store cannot see that n == N: it would
            // keep an assertion per store, which the reference does not have.)
            unsafe { dst.store_unchecked(y, [0i32, j]) };
        }
    }
}
