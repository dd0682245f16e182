// Integer forms a cutile-rs port writes where cuTile Python has a builtin (tests/ir_kernels/intforms.py holds
// the references): `(m + TILE - 1) / TILE` for ct.cdiv, `%` (remi, truncating) for Python's floor-mod, an
// `if`/`else` clamp for min(). `swizzle_copy` is equivalent to the reference; `swizzle_copy_floor` rounds the
// tile count down (`m / TILE`), a real bug: the last partial tile of rows is never visited.
#[cutile::module]
pub mod intforms {
    use cutile::core::*;

    #[cutile::entry()]
    fn swizzle_copy<const TILE: i32, const GROUP: i32>(
        y: &mut Tensor<f32, { [TILE] }>,
        x: &Tensor<f32, { [-1] }>,
    ) {
        let bid: i32 = program_id(0);
        let x_shape: Shape<{ [-1] }> = x.shape();
        let m: i32 = x_shape[0];
        let num_m: i32 = (m + TILE - 1i32) / TILE;
        let first: i32 = (bid / GROUP) * GROUP;
        let rem: i32 = num_m - first;
        let gsm: i32 = if rem < GROUP { rem } else { GROUP };
        let row: i32 = first + bid % gsm;
        let tiles: Partition<f32, { [TILE] }> = x.partition(shape![TILE]);
        let t: Tile<f32, { [TILE] }> = tiles.load([row]);
        y.store(t);
    }

    #[cutile::entry()]
    fn swizzle_copy_floor<const TILE: i32, const GROUP: i32>(
        y: &mut Tensor<f32, { [TILE] }>,
        x: &Tensor<f32, { [-1] }>,
    ) {
        let bid: i32 = program_id(0);
        let x_shape: Shape<{ [-1] }> = x.shape();
        let m: i32 = x_shape[0];
        let num_m: i32 = m / TILE;
        let first: i32 = (bid / GROUP) * GROUP;
        let rem: i32 = num_m - first;
        let gsm: i32 = if rem < GROUP { rem } else { GROUP };
        let row: i32 = first + bid % gsm;
        let tiles: Partition<f32, { [TILE] }> = x.partition(shape![TILE]);
        let t: Tile<f32, { [TILE] }> = tiles.load([row]);
        y.store(t);
    }
}
