// A raw-pointer cutile-rs port (the calling convention of hand-tuned ports): base pointers plus the scalars the
// kernel needs (row count, column count, row strides), not one tensor view per array. Reference:
// tests/ir_kernels/pairs.py `row_double` (cuTile Python gather/scatter with the arrays' own bounds).
// `row_double` masks rows and columns like the reference; `row_double_out_bounds` bounds its store by the
// output's own row and column counts; `row_double_cols_only` drops the row bound.
#[cutile::module]
pub mod rowptr {
    use cutile::core::*;

    #[cutile::entry()]
    pub unsafe fn row_double<const BLOCK: i32>(
        out_ptr: *mut f32,
        in_ptr: *mut f32,
        n_rows: i32,
        n_cols: i32,
        in_stride: i32,
        out_stride: i32,
    ) {
        let in_ptr = unsafe { assume_div_by::<_, 16>(in_ptr) };
        let out_ptr = unsafe { assume_div_by::<_, 16>(out_ptr) };
        let row: i32 = get_tile_block_id().0;
        let row32: Tile<i32, { [] }> = scalar_to_tile(row);
        let in_stride32: Tile<i32, { [] }> = scalar_to_tile(in_stride);
        let out_stride32: Tile<i32, { [] }> = scalar_to_tile(out_stride);
        let row64: Tile<i64, { [] }> = exti(row32);
        let in_off: Tile<i64, { [] }> = row64 * exti(in_stride32);
        let out_off: Tile<i64, { [] }> = row64 * exti(out_stride32);
        let cols: Tile<i32, { [BLOCK] }> = iota(const_shape![BLOCK]);
        let col_ok: Tile<bool, { [BLOCK] }> =
            cmpi(cols, broadcast_scalar(n_cols, const_shape![BLOCK]), predicate::LessThan);
        let row_ok: Tile<bool, { [BLOCK] }> = cmpi(
            broadcast_scalar(row, const_shape![BLOCK]),
            broadcast_scalar(n_rows, const_shape![BLOCK]),
            predicate::LessThan,
        );
        let mask: Tile<bool, { [BLOCK] }> = row_ok & col_ok;
        let src_base: PointerTile<*mut f32, { [] }> = pointer_to_tile(in_ptr);
        let src_row: PointerTile<*mut f32, { [] }> = src_base.offset_tile(in_off);
        let src_one: PointerTile<*mut f32, { [1] }> = src_row.reshape(const_shape![1]);
        let src_all: PointerTile<*mut f32, { [BLOCK] }> = src_one.broadcast(const_shape![BLOCK]);
        let src: PointerTile<*mut f32, { [BLOCK] }> = src_all.offset_tile(cols);
        let (t, _tok): (Tile<f32, { [BLOCK] }>, Token) = load_ptr_tko(
            src, ordering::Weak, None::<scope::TileBlock>, Some(mask), None::<f32>, None::<Token>, Latency::<0>,
        );
        let two: Tile<f32, { [BLOCK] }> = constant(2.0f32, const_shape![BLOCK]);
        let dst_base: PointerTile<*mut f32, { [] }> = pointer_to_tile(out_ptr);
        let dst_row: PointerTile<*mut f32, { [] }> = dst_base.offset_tile(out_off);
        let dst_one: PointerTile<*mut f32, { [1] }> = dst_row.reshape(const_shape![1]);
        let dst_all: PointerTile<*mut f32, { [BLOCK] }> = dst_one.broadcast(const_shape![BLOCK]);
        let dst: PointerTile<*mut f32, { [BLOCK] }> = dst_all.offset_tile(cols);
        let _done: Token = store_ptr_tko(
            dst, t * two, ordering::Weak, None::<scope::TileBlock>, Some(mask), None::<Token>, Latency::<0>,
        );
    }

    #[cutile::entry()]
    pub unsafe fn row_double_out_bounds<const BLOCK: i32>(
        out_ptr: *mut f32,
        in_ptr: *mut f32,
        n_rows: i32,
        n_cols: i32,
        out_rows: i32,
        out_cols: i32,
        in_stride: i32,
        out_stride: i32,
    ) {
        let in_ptr = unsafe { assume_div_by::<_, 16>(in_ptr) };
        let out_ptr = unsafe { assume_div_by::<_, 16>(out_ptr) };
        let row: i32 = get_tile_block_id().0;
        let row32: Tile<i32, { [] }> = scalar_to_tile(row);
        let in_stride32: Tile<i32, { [] }> = scalar_to_tile(in_stride);
        let out_stride32: Tile<i32, { [] }> = scalar_to_tile(out_stride);
        let row64: Tile<i64, { [] }> = exti(row32);
        let in_off: Tile<i64, { [] }> = row64 * exti(in_stride32);
        let out_off: Tile<i64, { [] }> = row64 * exti(out_stride32);
        let cols: Tile<i32, { [BLOCK] }> = iota(const_shape![BLOCK]);
        let col_ok: Tile<bool, { [BLOCK] }> =
            cmpi(cols, broadcast_scalar(n_cols, const_shape![BLOCK]), predicate::LessThan);
        let row_ok: Tile<bool, { [BLOCK] }> = cmpi(
            broadcast_scalar(row, const_shape![BLOCK]),
            broadcast_scalar(n_rows, const_shape![BLOCK]),
            predicate::LessThan,
        );
        let mask: Tile<bool, { [BLOCK] }> = row_ok & col_ok;
        let src_base: PointerTile<*mut f32, { [] }> = pointer_to_tile(in_ptr);
        let src_row: PointerTile<*mut f32, { [] }> = src_base.offset_tile(in_off);
        let src_one: PointerTile<*mut f32, { [1] }> = src_row.reshape(const_shape![1]);
        let src_all: PointerTile<*mut f32, { [BLOCK] }> = src_one.broadcast(const_shape![BLOCK]);
        let src: PointerTile<*mut f32, { [BLOCK] }> = src_all.offset_tile(cols);
        let (t, _tok): (Tile<f32, { [BLOCK] }>, Token) = load_ptr_tko(
            src, ordering::Weak, None::<scope::TileBlock>, Some(mask), None::<f32>, None::<Token>, Latency::<0>,
        );
        let two: Tile<f32, { [BLOCK] }> = constant(2.0f32, const_shape![BLOCK]);
        let dst_base: PointerTile<*mut f32, { [] }> = pointer_to_tile(out_ptr);
        let dst_row: PointerTile<*mut f32, { [] }> = dst_base.offset_tile(out_off);
        let dst_one: PointerTile<*mut f32, { [1] }> = dst_row.reshape(const_shape![1]);
        let dst_all: PointerTile<*mut f32, { [BLOCK] }> = dst_one.broadcast(const_shape![BLOCK]);
        let dst: PointerTile<*mut f32, { [BLOCK] }> = dst_all.offset_tile(cols);
        let out_col_ok: Tile<bool, { [BLOCK] }> =
            cmpi(cols, broadcast_scalar(out_cols, const_shape![BLOCK]), predicate::LessThan);
        let out_row_ok: Tile<bool, { [BLOCK] }> = cmpi(
            broadcast_scalar(row, const_shape![BLOCK]),
            broadcast_scalar(out_rows, const_shape![BLOCK]),
            predicate::LessThan,
        );
        let out_mask: Tile<bool, { [BLOCK] }> = out_row_ok & out_col_ok;
        let _done: Token = store_ptr_tko(
            dst, t * two, ordering::Weak, None::<scope::TileBlock>, Some(out_mask), None::<Token>, Latency::<0>,
        );
    }

    #[cutile::entry()]
    pub unsafe fn row_double_cols_only<const BLOCK: i32>(
        out_ptr: *mut f32,
        in_ptr: *mut f32,
        _n_rows: i32,
        n_cols: i32,
        in_stride: i32,
        out_stride: i32,
    ) {
        let in_ptr = unsafe { assume_div_by::<_, 16>(in_ptr) };
        let out_ptr = unsafe { assume_div_by::<_, 16>(out_ptr) };
        let row: i32 = get_tile_block_id().0;
        let row32: Tile<i32, { [] }> = scalar_to_tile(row);
        let in_stride32: Tile<i32, { [] }> = scalar_to_tile(in_stride);
        let out_stride32: Tile<i32, { [] }> = scalar_to_tile(out_stride);
        let row64: Tile<i64, { [] }> = exti(row32);
        let in_off: Tile<i64, { [] }> = row64 * exti(in_stride32);
        let out_off: Tile<i64, { [] }> = row64 * exti(out_stride32);
        let cols: Tile<i32, { [BLOCK] }> = iota(const_shape![BLOCK]);
        let mask: Tile<bool, { [BLOCK] }> =
            cmpi(cols, broadcast_scalar(n_cols, const_shape![BLOCK]), predicate::LessThan);
        let src_base: PointerTile<*mut f32, { [] }> = pointer_to_tile(in_ptr);
        let src_row: PointerTile<*mut f32, { [] }> = src_base.offset_tile(in_off);
        let src_one: PointerTile<*mut f32, { [1] }> = src_row.reshape(const_shape![1]);
        let src_all: PointerTile<*mut f32, { [BLOCK] }> = src_one.broadcast(const_shape![BLOCK]);
        let src: PointerTile<*mut f32, { [BLOCK] }> = src_all.offset_tile(cols);
        let (t, _tok): (Tile<f32, { [BLOCK] }>, Token) = load_ptr_tko(
            src, ordering::Weak, None::<scope::TileBlock>, Some(mask), None::<f32>, None::<Token>, Latency::<0>,
        );
        let two: Tile<f32, { [BLOCK] }> = constant(2.0f32, const_shape![BLOCK]);
        let dst_base: PointerTile<*mut f32, { [] }> = pointer_to_tile(out_ptr);
        let dst_row: PointerTile<*mut f32, { [] }> = dst_base.offset_tile(out_off);
        let dst_one: PointerTile<*mut f32, { [1] }> = dst_row.reshape(const_shape![1]);
        let dst_all: PointerTile<*mut f32, { [BLOCK] }> = dst_one.broadcast(const_shape![BLOCK]);
        let dst: PointerTile<*mut f32, { [BLOCK] }> = dst_all.offset_tile(cols);
        let _done: Token = store_ptr_tko(
            dst, t * two, ordering::Weak, None::<scope::TileBlock>, Some(mask), None::<Token>, Latency::<0>,
        );
    }
}
