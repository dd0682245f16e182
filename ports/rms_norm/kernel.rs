// Port of examples/rms_norm.py `rms_norm_kernel`. CHUNKS is an integer structural variant in the reference, so
// each branch is its own entry: `rms_norm_single` (CHUNKS == 1: the row is loaded once and kept in registers)
// and `rms_norm_chunked` (two passes over CHUNKS column tiles: sum of squares, then normalise). The chunked
// entry's output is the block's whole row, a static [1, N] slab (cutile launches an output as a partition whose
// shape is the declared one); it stores its CHUNKS tiles at [0, c], relative to the slab. N is the row length the
// variant was built for: the launcher refuses any other. Its loads of x and of the weight are plain view loads
// (load_view_tko), as the reference's are: `Partition::load` would add a bounds assertion per load that the
// compiler cannot discharge for the constant CHUNKS against the run-time width (a 192-byte stack frame in the
// cubin; the reference has none).
// Speed (measured through `tileport gate` on the H200, docs/gpu-runs.md): as the reference compiles it, the
// single-pass kernel takes 255 registers for 256 threads (one block per SM, 13 % occupancy); `rms_norm_single`
// asks tileiras for 4 blocks per SM (`occupancy = 4`), which took it from 1.01-1.03x to 0.40-0.52x the reference.
#[cutile::module]
pub mod rms_norm {
    use cutile::core::*;

    #[cutile::entry(optimization_hints = (sm_90 = (occupancy = 4,),))]
    fn rms_norm_single<E: ElementType, const TILE_N: i32>(
        x: &Tensor<E, { [-1, -1] }>,
        weight: &Tensor<E, { [-1] }>,
        out: &mut Tensor<E, { [1, TILE_N] }>,
        eps: f32,
    ) {
        let row: i32 = program_id(0);
        let n: f32 = convert_scalar(x.shape()[1]);
        let rows: Partition<E, { [1, TILE_N] }> = x.partition(shape![1, TILE_N]);
        let t: Tile<E, { [1, TILE_N] }> = rows.load([row, 0i32]);
        let t: Tile<f32, { [1, TILE_N] }> = convert_tile(t);
        let sum_sq: Tile<f32, { [1] }> = reduce_sum(t * t, 1i32);
        let mean_sq: Tile<f32, { [1] }> = sum_sq / n.broadcast(shape![1]);
        let inv_rms: Tile<f32, { [1] }> = rsqrt(mean_sq + eps.broadcast(shape![1]), ftz::Disabled);
        let inv_rms: Tile<f32, { [1, TILE_N] }> = inv_rms.reshape(shape![1, 1]).broadcast(shape![1, TILE_N]);
        let w_tiles: Partition<E, { [TILE_N] }> = weight.partition(shape![TILE_N]);
        let w: Tile<E, { [TILE_N] }> = w_tiles.load([0i32]);
        let w: Tile<f32, { [TILE_N] }> = convert_tile(w);
        let w: Tile<f32, { [1, TILE_N] }> = w.reshape(shape![1, TILE_N]);
        let y: Tile<E, { [1, TILE_N] }> = convert_tile(t * inv_rms * w);
        out.store(y);
    }

    #[cutile::entry()]
    fn rms_norm_chunked<E: ElementType, const TILE_N: i32, const CHUNKS: i32, const N: i32>(
        x: &Tensor<E, { [-1, -1] }>,
        weight: &Tensor<E, { [-1] }>,
        out: &mut Tensor<E, { [1, N] }>,
        eps: f32,
    ) {
        let row: i32 = program_id(0);
        let n: f32 = convert_scalar(x.shape()[1]);
        let rows: Partition<E, { [1, TILE_N] }> = x.partition(shape![1, TILE_N]);
        let w_tiles: Partition<E, { [TILE_N] }> = weight.partition(shape![TILE_N]);
        let mut acc: Tile<f32, { [1, TILE_N] }> = constant(0.0f32, shape![1, TILE_N]);
        for c in 0i32..CHUNKS {
            let t: Tile<E, { [1, TILE_N] }> =
                load_view_tko(&rows, [row, c], ordering::Weak, scope::TileBlock, None, tma::Enabled);
            let t: Tile<f32, { [1, TILE_N] }> = convert_tile(t);
            acc = acc + t * t;
        }
        let sum_sq: Tile<f32, { [1] }> = reduce_sum(acc, 1i32);
        let inv_rms: Tile<f32, { [1] }> =
            rsqrt(sum_sq / n.broadcast(shape![1]) + eps.broadcast(shape![1]), ftz::Disabled);
        let inv_rms: Tile<f32, { [1, TILE_N] }> = inv_rms.reshape(shape![1, 1]).broadcast(shape![1, TILE_N]);
        let mut out_tiles: PartitionMut<E, { [1, TILE_N] }> = out.partition_mut(shape![1, TILE_N]);
        for c in 0i32..CHUNKS {
            let t: Tile<E, { [1, TILE_N] }> =
                load_view_tko(&rows, [row, c], ordering::Weak, scope::TileBlock, None, tma::Enabled);
            let t: Tile<f32, { [1, TILE_N] }> = convert_tile(t);
            let w: Tile<E, { [TILE_N] }> =
                load_view_tko(&w_tiles, [c], ordering::Weak, scope::TileBlock, None, tma::Enabled);
            let w: Tile<f32, { [TILE_N] }> = convert_tile(w);
            let y: Tile<E, { [1, TILE_N] }> = convert_tile(t * inv_rms * w.reshape(shape![1, TILE_N]));
            out_tiles.store(y, [0i32, c]);
        }
    }
}
