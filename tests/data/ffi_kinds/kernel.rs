// Output kinds the generated launcher takes beyond one tile per block (tests/validators/gpu/test_ffi_kinds.py):
// a permuted store into a whole output (every tile dim dynamic), a raw device pointer with its extents, a
// rank-4 output taken as `&Tensor` (cutile 0.5 has no `&mut Tensor` above rank 3), and a slab output launched on
// fewer blocks than it has slabs.
#[cutile::module]
pub mod kinds {
    use cutile::core::*;

    // out[bn, bm] = x[bm, bn]^T: block (bm, bn) writes the tile at (bn, bm), so the launch grid is not a
    // partition grid of `out` (a permuted store, as cuTile Python's transpose).
    // unchecked: cutile 0.5 hoists the bound of a block-id store index into a host launch check on the view's
    // extent, and the launcher's whole-output binding reports that view as -1 (what cutile's own output check
    // compares), so the check cannot pass; cuTile Python never traps on a view store either (it clips).
    #[cutile::entry(unchecked_accesses = true)]
    unsafe fn permuted<E: ElementType, const TILE: i32>(x: &Tensor<E, { [-1, -1] }>, out: &mut Tensor<E, { [-1, -1] }>) {
        let xs: Partition<E, { [TILE, TILE] }> = x.partition(shape![TILE, TILE]);
        let mut os: PartitionMut<E, { [TILE, TILE] }> = out.partition_mut(shape![TILE, TILE]);
        let bm: i32 = program_id(0);
        let bn: i32 = program_id(1);
        let t: Tile<E, { [TILE, TILE] }> = xs.load([bm, bn]);
        os.store(t.transpose(), [bn, bm]);
    }

    // out = x through a raw pointer: the launcher passes the reference's `out` as a DevicePointer and fills
    // out_dim_0 / out_stride_0 from it.
    #[cutile::entry(unchecked_accesses = true)]
    unsafe fn through_pointer<E: ElementType, const TILE: i32>(
        x: &Tensor<E, { [-1] }>,
        out_ptr: *mut E,
        out_dim_0: i32,
        out_stride_0: i32,
    ) {
        let shape: Shape<{ [-1] }> = Shape::<{ [-1] }> { dims: &[out_dim_0] };
        let strides: Array<{ [-1] }> = Array::<{ [-1] }> { dims: &[out_stride_0] };
        let base: PointerTile<*mut E, { [] }> = pointer_to_tile(out_ptr);
        let mut out: Tensor<E, { [-1] }> = make_tensor_view(base, shape, strides, new_token_unordered());
        let xs: Partition<E, { [TILE] }> = x.partition(shape![TILE]);
        let mut os: PartitionMut<E, { [TILE] }> = out.partition_mut(shape![TILE]);
        let b: i32 = program_id(0);
        let t: Tile<E, { [TILE] }> = xs.load([b]);
        os.store(t, [b]);
    }

    // out = x + x on rank-4 tensors: cutile-compiler 0.5.0 refuses a `&mut Tensor` parameter of rank > 3
    // (kernel_entry_generator.rs:132-139), so the output is a `&Tensor` written in place through an unsafe
    // PartitionMut of it, as `tileport draft` writes it (`shared_output`); the launcher passes the reference's tensor
    // as it passes an input. unchecked: cuTile Python clips a view store, never traps.
    #[cutile::entry(unchecked_accesses = true)]
    unsafe fn shared4<E: ElementType, const TILE: i32>(
        x: &Tensor<E, { [-1, -1, -1, -1] }>,
        out: &Tensor<E, { [-1, -1, -1, -1] }>,
    ) {
        let xs: Partition<E, { [1, TILE, 1, TILE] }> = x.partition(shape![1, TILE, 1, TILE]);
        let mut os: PartitionMut<E, { [1, TILE, 1, TILE] }> =
            unsafe { make_partition_view_mut(out, shape![1, TILE, 1, TILE], padding::None, out.token()) };
        let b: i32 = program_id(0);
        let i: i32 = program_id(1);
        let j: i32 = program_id(2);
        let t: Tile<E, { [1, TILE, 1, TILE] }> = xs.load([b, i, 0i32, j]);
        os.store(t + t, [b, i, 0i32, j]);
    }

    // out = x + x on the slabs the grid reaches: the reference launches 2 blocks over a longer tensor, so only
    // its first two tiles are written. cutile launches a `&mut Tensor<E, {[TILE]}>` as a partition whose grid must
    // be the launch grid; the launcher passes the output cut to the slabs the grid reaches (hostrun `_reached`).
    #[cutile::entry()]
    fn head<E: ElementType, const TILE: i32>(x: &Tensor<E, { [-1] }>, out: &mut Tensor<E, { [TILE] }>) {
        let xs: Partition<E, { [TILE] }> = x.partition(shape![TILE]);
        let b: i32 = program_id(0);
        let t: Tile<E, { [TILE] }> = xs.load([b]);
        out.store(t + t);
    }
}
