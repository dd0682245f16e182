// Port of examples/vector_add.py `vector_add_kernel`: one 1-D tile of B elements per block, generic over the
// element type (the op declares float16, bfloat16 and float32; cuTile Python adds in the input dtype).
#[cutile::module]
pub mod vector_add {
    use cutile::core::*;

    #[cutile::entry()]
    fn add<E: ElementType, const B: i32>(
        z: &mut Tensor<E, { [B] }>,
        x: &Tensor<E, { [-1] }>,
        y: &Tensor<E, { [-1] }>,
    ) {
        let tx = x.load_like(z);
        let ty = y.load_like(z);
        z.store(tx + ty);
    }
}
