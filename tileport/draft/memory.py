"""Memory: tiled views (view loads/stores, hoisted partitions), pointer gathers/scatters and Array.slice."""

from __future__ import annotations

import ast

from tileport.draft.values import (OP_DTYPE, Array, NeedsDtype, Unsupported, Val, View, constant_tile, gap,
                                          literal, paren, shape_macro, tile_type)
from tileport.draft.syntax import ELEM_BYTES, ct_name, call_label, bind_args, broadcast_shapes, operand


class MemoryOps:
    """Mixin of BodyTranslator: everything that reads or writes an array."""

    def call_statement(self, call: ast.Call) -> None:
        name = ct_name(call.func)
        if name == "store":
            args = bind_args(call, ["array", "index", "tile"], {"order", "latency", "allow_tma"})
            self.store(args, call)
            return
        if name == "scatter":
            args = bind_args(call, ["array", "indices", "value"], {"mask", "check_bounds", "latency"})
            self.pointer_access(args, call, "", store=True)
            return
        if isinstance(call.func, ast.Attribute) and call.func.attr == "store" and name is None:
            target = self.expr(call.func.value, "")
            if target.kind == "view" and not target.value.var:
                self.method(call, "")
                return
            if target.kind == "view":
                args = bind_args(call, ["index", "tile"], set())
                self.view_store(target.value, args["index"], args["tile"], call)
                return
        raise Unsupported(call_label(call), call)

    def store(self, args: dict[str, ast.expr], call: ast.Call) -> None:
        tma = self.tma_hint(args["allow_tma"], "ct.store") if "allow_tma" in args else None
        latency = self.latency(args.get("latency"), "ct.store")
        order = self.order(args.get("order"))
        arr = self.expr(args["array"], "")
        if arr.kind != "array":
            raise Unsupported("ct.store into something that is not a kernel array parameter", args["array"])
        tile = self.expr(args["tile"], f"{arr.value.name}_tile")
        if tile.kind == "scalar" or tile.kind == "py":  # a scalar stored as a tile of the index's rank (cuTile)
            tile = self.scalar_store_tile(tile, arr.value, args["tile"])
        if tile.kind != "tile":
            raise Unsupported("ct.store of a scalar", args["tile"])
        if len(tile.shape) == 0 and arr.value.ndim > 0:  # a 0-d tile: cuTile stores it as a tile of ones
            ones = ("1",) * arr.value.ndim
            tile = Val("tile", f"{paren(tile.expr)}.reshape({shape_macro(ones)})", tile.dtype, ones)
        shape = tile.shape
        if order is not None and order != tuple(range(len(shape))):
            # cuTile stores through a partition view with a dim_map; cutile 0.5's mutable views have none
            # (_core.rs: make_partition_view_mut takes no dim_map, unlike make_partition_view)
            raise gap("ct.store(..., order=) with a permutation", call, "mutable partition view with a dim_map",
                      "permute the tile (ct.permute / transpose) and store it into the plain view at the permuted "
                      "index: the same values, through another view")
        view = self.view_for(arr.value, shape, "None", None, mutable=True, node=call)
        self.view_store(view, args["index"], args["tile"], call, tile, hints=(latency, tma))

    def scalar_store_tile(self, v: Val, arr: Array, node: ast.expr) -> Val:
        dtype = arr.dtype
        if v.kind == "py":
            return self.tile(dtype, (), constant_tile(v.value, dtype, (), node))
        if v.dtype != dtype:
            raise Unsupported("a store that converts dtype implicitly", node)
        return self.tile(dtype, (), f"scalar_to_tile({v.expr})")

    def latency(self, node: ast.expr | None, what: str) -> int | None:
        if node is None:
            return None
        lv = self.expr(node, "")
        if lv.kind == "py" and lv.value is None:
            return None
        if lv.kind == "py" and isinstance(lv.value, int) and not isinstance(lv.value, bool) and 1 <= lv.value <= 10:
            return lv.value
        raise Unsupported(f"{what}(..., latency=) that is not a constant int in 1..10", node)

    def order(self, node: ast.expr | None) -> tuple[int, ...] | None:
        if node is None:
            return None
        v = self.expr(node, "")
        if v.kind == "py" and isinstance(v.value, tuple) and all(isinstance(o, int) for o in v.value):
            return tuple(int(o) for o in v.value)
        if v.kind == "py" and v.value == "C":
            return None
        raise Unsupported("an order that is not a constant tuple", node)

    def view_store(self, view: View, index_node: ast.expr, tile_node: ast.expr, call: ast.Call,
                   tile: Val | None = None, hints: tuple = (None, None)) -> None:
        if not view.mutable:
            view = self.view_for(view.array, view.shape, "None", None, mutable=True, node=call)
        tile = tile or self.expr(tile_node, f"{view.array.name}_tile")
        if tile.kind != "tile":
            raise Unsupported("storing a scalar through a view", tile_node)
        if tile.shape != view.shape:
            raise Unsupported("a stored tile whose shape differs from the view's tile", tile_node,
                              f"{tile.shape} vs {view.shape}")
        if tile.dtype != view.array.dtype:
            # cuTile's store casts implicitly (implicit_cast: astype where promotion allows): convert_tile
            if OP_DTYPE in (tile.dtype, view.array.dtype):
                raise NeedsDtype("a store that converts to or from the op dtype", tile_node,
                                 "the entry is specialised per dtype")
            tile = self.tile(view.array.dtype, tile.shape, f"convert_tile({tile.expr})",
                             f"{view.array.name}_tile")
        items = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
        if len(items) != len(view.shape):
            raise Unsupported("an index whose length differs from the array's rank", index_node)
        vals = [self.expr(i, "") for i in items]
        index = [self.index_scalar(v, i) for v, i in zip(vals, items)]
        latency, tma = hints
        # the loops around the store, and whether an index is the innermost one's counter (port._thread_loop_tokens)
        loops = (tuple(loop[4] for loop in self.loops), bool(self.loops) and self.loops[-1][3] in index)
        if latency is None and tma is not False:
            self.out_stores.setdefault(view.array.name, []).append(
                (view.shape, [_block_axis(v) for v in vals], bool(self.loops), view.var, tile.expr, index) + loops)
            self.emit(f"{view.var}.store({tile.expr}, [{', '.join(index)}]);")
            return
        # a store with cuTile's latency / allow_tma=False hints: the op under PartitionMut::store, with them
        self.out_stores.setdefault(view.array.name, []).append(
            (view.shape, [_block_axis(v) for v in vals], True, view.var, tile.expr, index) + loops)
        lat = f"Some({latency})" if latency is not None else "None"
        self.emit(f"unsafe {{ store_view_tko_mut(&mut {view.var}, {tile.expr}, [{', '.join(index)}], "
                  f"ordering::Weak, scope::TileBlock, {lat}, tma::{'Disabled' if tma is False else 'Enabled'}) }};")

    def index_list(self, node: ast.expr, rank: int) -> list[str]:
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        if len(items) != rank:
            raise Unsupported("an index whose length differs from the array's rank", node)
        return [self.index_scalar(self.expr(i, ""), i) for i in items]

    def index_scalar(self, v: Val, node: ast.AST, bound: bool = False) -> str:
        if v.kind == "tile" and v.dtype == "i32" and all(d == "1" for d in v.shape):
            # a 0-d tile (a `shape=()` load, `.item()`) is a scalar in cuTile Python
            t = v.expr if not v.shape else f"{paren(v.expr)}.reshape(shape![])"
            v = Val("scalar", self.hoist("", "i32", f"tile_to_scalar({t})"), "i32")
        if v.kind == "py" and isinstance(v.value, int) and not isinstance(v.value, bool):
            return f"{v.value}i32"
        if v.kind == "scalar" and v.dtype == "i32":
            if not bound and not v.extra.get("index_ok"):
                self.computed_index = True
            return v.expr
        raise Unsupported("an index or bound that is not an int32 scalar", node)

    def view_for(self, arr: Array, shape: tuple[str, ...], padding: str, order: tuple[int, ...] | None,
                 mutable: bool, node: ast.AST, var: str | None = None) -> View:
        """The hoisted partition of `arr` with this tile shape, padding and dim order (created once)."""
        if len(shape) != arr.ndim:
            raise Unsupported("a tile shape whose rank differs from the array's", node)
        if mutable and not arr.mutable:
            raise Unsupported("a store into an array that is also loaded", node)
        if arr.mutable and not mutable:
            if padding != "any":
                raise Unsupported("a load from an array the kernel also stores to", node)
            mutable = True  # num_tiles of an output: count on its PartitionMut (no second, shared borrow)
        key = (arr.name, shape, padding if not mutable else "mut", order)
        if key in self.prologue.views:
            return self.prologue.views[key]
        if var and var not in self.prologue.view_names:
            name = var  # a Python view variable keeps its name
        else:
            name = self.fresh(f"{arr.name}_tiles")
        self.prologue.view_names.add(name)
        ty = f"<{arr.dtype}, {{ [{', '.join(shape)}] }}>"
        ref = f"&{arr.name}" if arr.in_body else arr.name  # a sliced view is a Tensor value, parameters references
        if mutable and arr.name in self.shared_outputs:  # a `&Tensor` output (rank > 3)
            line = (f"let mut {name}: PartitionMut{ty} = unsafe {{ make_partition_view_mut({arr.name}, "
                    f"{shape_macro(shape)}, padding::None, {arr.name}.token()) }};")
        elif mutable:
            line = f"let mut {name}: PartitionMut{ty} = {arr.name}.partition_mut({shape_macro(shape)});"
        elif order is not None and order != tuple(range(len(shape))):
            if padding not in ("Zero", "any"):
                raise Unsupported("a permuted load with a padding other than zero", node)
            dims = ", ".join(str(o) for o in order)
            line = (f"let {name}: Partition{ty} = "
                    f"{arr.name}.partition_permuted({shape_macro(shape)}, const_array![{dims}]);")
        elif padding == "Zero":
            line = f"let {name}: Partition{ty} = {arr.name}.partition({shape_macro(shape)});"
        elif padding == "any" and not mutable:  # counting tiles (num_tiles): a view without padding, as cuTile
            line = (f"let {name}: Partition{ty} = unsafe {{ make_partition_view({ref}, {shape_macro(shape)}, "
                    f"padding::None, dim_map::Identity, {arr.name}.token()) }};")
        else:
            line = (f"let {name}: Partition{ty} = unsafe {{ make_partition_view({ref}, {shape_macro(shape)}, "
                    f"padding::{padding}, dim_map::Identity, {arr.name}.token()) }};")
        if arr.in_body:
            self.emit(line)
        else:
            self.prologue.lines.append(line)
        view = View(name, arr, shape, mutable)
        self.prologue.views[key] = view
        return view

    def ct_num_tiles(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["array", "axis", "shape"], {"order"})
        if "order" in args:
            raise Unsupported("ct.num_tiles(..., order=)", node)
        arr = self.expr(args["array"], "")
        if arr.kind != "array":
            raise Unsupported("ct.num_tiles of something that is not an array parameter", node)
        shape = self.dims(args["shape"])
        axis = self.const_int(args["axis"])
        view = self.view_for(arr.value, shape, "any", None, mutable=False, node=node)
        return Val("scalar", f"num_tiles(&{view.var}, {axis}i32)", "i32", extra={"tile_count": True})

    def ct_gather(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["array", "indices"], {"mask", "padding_value", "check_bounds", "latency"})
        return self.pointer_access(args, node, hint, store=False)

    def pointer_access(self, args: dict[str, ast.expr], node: ast.Call, hint: str, store: bool) -> Val:
        """ct.gather / ct.scatter as cuTile Python lowers them: i64 offsets (index x stride, summed), unsigned
        bounds checks per index (unless check_bounds=False) and-ed with the mask, a tile of pointers, then one
        load_ptr_tko (always with a padding value) or store_ptr_tko."""
        what = "ct.scatter" if store else "ct.gather"
        latency = self.latency(args.get("latency"), what) or 0  # Latency::<0>: no hint, as cuTile writes none
        arr_v = self.expr(args["array"], "")
        if arr_v.kind != "array":
            raise Unsupported(f"{what} on something that is not a kernel array parameter", args["array"])
        arr: Array = arr_v.value
        items = args["indices"].elts if isinstance(args["indices"], ast.Tuple) else [args["indices"]]
        if len(items) != arr.ndim:
            raise Unsupported(f"{what} with {len(items)} index tile(s) for a {arr.ndim}-D array", node)
        idx = [self.expr(i, "") for i in items]
        for v, n in zip(idx, items):
            ok = (v.kind == "py" and isinstance(v.value, int) and not isinstance(v.value, bool)) or \
                 (v.kind in ("scalar", "tile") and v.dtype == "i32")
            if not ok:
                raise Unsupported(f"a {what} index that is not int32", n)
        mask = self.expr(args["mask"], "") if "mask" in args else None
        if mask is not None and (mask.kind != "tile" or mask.dtype != "bool"):
            raise Unsupported(f"a {what} mask that is not a boolean tile", args["mask"])
        value = self.expr(args["value"], "") if store else None
        check = self.flag(args.get("check_bounds")) if "check_bounds" in args else True
        shapes = [v.shape for v in idx if v.kind == "tile"] + ([mask.shape] if mask is not None else [])
        if value is not None and value.kind == "tile":
            shapes.append(value.shape)
        shape = broadcast_shapes(shapes or [()], node)
        p = self.fresh(f"{arr.name}_{'sc' if store else 'g'}")
        u0 = "Tile<u64, { [] }>"
        terms: list[str] = []
        bounds: list[str] = []
        strides = self.stride_constants.get(arr.name, [None] * arr.ndim)
        for k, v in enumerate(idx):
            if v.kind == "py":  # a literal index: cuTile makes it an i64 constant of the access shape, no extension
                bits = v.value % (1 << 64)  # a negative index: the same bits as its i64 (out of bounds unsigned)
                eb = self.hoist(f"{p}_i{k}", tile_type("u64", shape), f"constant({bits}u64, {shape_macro(shape)})")
            else:
                src, src_shape = (v.expr, v.shape) if v.kind == "tile" else \
                    (self.hoist("", "Tile<i32, { [] }>", f"scalar_to_tile({v.expr})"), ())
                e = self.hoist(f"{p}_i{k}", f"Tile<u64, {{ [{', '.join(src_shape)}] }}>", f"exti({src})")
                eb = self.to_tile(Val("tile", e, "u64", src_shape), "u64", shape, node)
            if check:
                n32 = self.hoist("", "Tile<i32, { [] }>", f"scalar_to_tile({arr.name}.shape()[{k}])")
                n64 = self.hoist(f"{p}_n{k}", u0, f"exti({n32})")
                bounds.append(self.hoist("", tile_type("bool", shape),
                                         f"lt_tile({eb}, {self.to_tile(Val('tile', n64, 'u64', ()), 'u64', shape, node)})"))
            if strides[k] == 1:
                st = self.hoist("", tile_type("u64", shape), f"constant(1u64, {shape_macro(shape)})")
            else:
                acc = self.strides_of(arr)
                s32 = self.hoist("", "Tile<i32, { [] }>", f"scalar_to_tile({acc}.dims[{k}])")
                s64 = self.hoist(f"{p}_s{k}", u0, f"exti({s32})")
                st = self.to_tile(Val("tile", s64, "u64", ()), "u64", shape, node)
            terms.append(self.hoist("", tile_type("u64", shape), f"{paren(eb)} * {paren(st)}"))
        offset = terms[0]
        for t in terms[1:]:
            offset = self.hoist("", tile_type("u64", shape), f"{offset} + {t}")
        masks = bounds[:1]
        for b in bounds[1:]:
            masks = [self.hoist("", tile_type("bool", shape), f"{masks[0]} & {b}")]
        if mask is not None:
            m = self.to_tile(mask, "bool", shape, node)
            masks = [self.hoist("", tile_type("bool", shape), f"{masks[0]} & {paren(m)}") if masks else m]
        mask_arg = f"Some({masks[0]})" if masks else "None"
        ptr_t = f"PointerTile<*mut {arr.dtype}, {{ [{', '.join(shape)}] }}>"
        base = self.hoist(f"{p}_base", f"PointerTile<*mut {arr.dtype}, {{ [] }}>", f"get_tensor_base({arr.name})")
        if shape:
            ones = ("1",) * len(shape)
            base = self.hoist("", f"PointerTile<*mut {arr.dtype}, {{ [{', '.join(ones)}] }}>",
                              f"{base}.reshape({shape_macro(ones)})")
            base = self.hoist("", ptr_t, f"{base}.broadcast({shape_macro(shape)})")
        ptr = self.hoist(f"{p}_ptr", ptr_t, f"addptr_tile({base}, {offset})")
        if not shape and arr.dtype in ELEM_BYTES:  # a single element: cuTile assumes it is naturally aligned
            ptr = self.hoist(f"{p}_ptr", ptr_t, f"unsafe {{ assume_div_by::<_, {ELEM_BYTES[arr.dtype]}>({ptr}) }}")
        carried = store and (len(self.scopes) > 1 or self.loops) and not arr.in_body and (
            arr.name not in self.ptr_tokens or arr.name in self.carried_tokens)
        if carried:
            # a scatter in a loop or a branch: a mutable Token, which cutile carries out of the block and from one
            # trip to the next, so the scatters stay ordered as cuTile Python orders them (token_order.py: a
            # pointer store is never a parallel loop store)
            tok = self.carried_tokens.get(arr.name)
            if tok is None:
                tok = self.carried_tokens[arr.name] = self.fresh(f"{arr.name}_token")
                self.prologue.lines.append(f"let mut {tok}: Token = get_tensor_token({arr.name});")
        else:
            tok = self.ptr_tokens.get(arr.name) or self.hoist(f"{arr.name}_token", "Token",
                                                               f"get_tensor_token({arr.name})")
        if store:
            if value.kind == "tile" and value.dtype != arr.dtype:
                # cuTile's scatter casts the value implicitly as a store does (_get_scatter_value: implicit_cast)
                if OP_DTYPE in (value.dtype, arr.dtype):
                    raise NeedsDtype("a scatter that converts to or from the op dtype", node,
                                     "the entry is specialised per dtype")
                value = self.tile(arr.dtype, value.shape, f"convert_tile({value.expr})", f"{arr.name}_value")
            val = self.to_tile(value, arr.dtype, shape, node)
            call = (f"unsafe {{ store_ptr_tko({ptr}, {val}, ordering::Weak, None::<scope::Device>, {mask_arg}, "
                    f"Some({tok}), Latency::<{latency}>) }};")
            if len(self.scopes) == 1 and not self.loops:  # top level: later accesses of this array wait for it
                t = self.fresh(f"{arr.name}_token")
                self.emit(f"let {t}: Token = {call}")
                self.ptr_tokens[arr.name] = t
            elif carried:
                self.emit(f"{tok} = {call}")
                self.ptr_tokens[arr.name] = tok
            else:  # a slice's, or after a store at the top level: nothing to carry it from (unordered)
                self.emit(call)
            return Val("none")
        if len(shape) >= 2 and masks:
            # cutile-compiler 0.5.0 compile_cuda_tile_op.rs (compile_load_ptr_tko) reshapes a scalar padding value
            # to shape [1] and broadcasts that to the result's rank, which tileiras rejects for rank >= 2
            # ('cuda_tile.broadcast' needs the same rank); written at rank 1 instead, the load pairs with no
            # reference op (measured: the IR check's memory.tile_shape error), so it stays a named gap
            raise gap(f"ct.gather of a rank-{len(shape)} tile with a padding value", node,
                      "valid lowering of a load_ptr_tko padding value for tiles of rank >= 2 (compile_load_ptr_tko "
                      "broadcasts it from rank 1)", "flatten the indices to a rank-1 gather and reshape the result")
        pad_v = self.expr(args["padding_value"], "") if "padding_value" in args else Val("py", value=0)
        if pad_v.kind != "py":
            raise Unsupported("a gather padding_value that is not a constant", args.get("padding_value", node))
        if arr.dtype == OP_DTYPE:  # a padding scalar of the generic E cannot be spelled: specialise per dtype
            raise NeedsDtype("a gather padding value of the op dtype", node)
        pad = literal(pad_v.value, arr.dtype, node)
        if "::" in pad:  # a named constant (E::ZERO, f16::NEG_INFINITY) is only accepted by constant(): a 0-d tile
            t = self.hoist(f"{p}_pad", tile_type(arr.dtype, ()), f"constant({pad}, shape![])")
            pad = self.hoist(f"{p}_pad", arr.dtype, f"tile_to_scalar({t})")
        out = self.fresh(hint or f"{p}_v")
        self.define_in_loops(out)
        self.emit(f"let ({out}, _): ({tile_type(arr.dtype, shape)}, Token) = unsafe {{ load_ptr_tko({ptr}, "
                  f"ordering::Weak, None::<scope::Device>, {mask_arg}, Some({pad}), Some({tok}), "
                  f"Latency::<{latency}>) }};")
        return Val("tile", out, arr.dtype, shape)

    def slice(self, arr: Array, node: ast.Call, hint: str) -> Val:
        """Array.slice(axis, start, stop) as cuTile lowers it: the base offset by start * stride[axis], the shape
        with stop - start on that axis, the same strides, one new tensor view."""
        args = bind_args(node, ["axis", "start", "stop"], set())
        if arr.mutable:
            raise Unsupported("a slice of an array the kernel stores to", node)
        axis = self.const_int(args["axis"])
        axis = axis + arr.ndim if axis < 0 else axis
        start_v, stop_v = self.expr(args["start"], ""), self.expr(args["stop"], "")
        start = self.index_scalar(start_v, args["start"], bound=True)
        stop = self.index_scalar(stop_v, args["stop"], bound=True)
        if hint and hint not in self.prologue.view_names:
            name = hint  # the Python variable keeps its name
        else:
            name = self.fresh(f"{arr.name}_slice")
        self.prologue.view_names.add(name)
        strides = self.strides_of(arr)
        consts = self.stride_constants.get(arr.name, [None] * arr.ndim)
        self.stride_constants[name] = consts
        # a slice between two constants has a static extent, as cuTile Python types it (`?x64`, not `?x?`)
        static = (stop_v.value - start_v.value if start_v.kind == stop_v.kind == "py"
                  and isinstance(start_v.value, int) and isinstance(stop_v.value, int) else None)
        dyn = ", ".join(str(static) if d == axis and static is not None else "-1" for d in range(arr.ndim))
        dims = [f"{arr.name}.shape()[{d}]" if d != axis else
                (f"{static}i32" if static is not None else f"{operand(stop)} - {operand(start)}")
                for d in range(arr.ndim)]
        shape = self.hoist(f"{name}_shape", f"Shape<{{ [{dyn}] }}>",
                           f"Shape::<{{ [{dyn}] }}> {{ dims: &[{', '.join(dims)}] }}")
        step = "1i32" if consts[axis] == 1 else f"{strides}.dims[{axis}]"
        off = self.hoist("", "Tile<i32, { [] }>", f"scalar_to_tile({operand(start)} * {step})")
        off64 = self.hoist(f"{name}_offset", "Tile<i64, { [] }>", f"exti({off})")
        base = self.hoist(f"{arr.name}_base", f"PointerTile<*mut {arr.dtype}, {{ [] }}>", f"get_tensor_base({arr.name})")
        moved = f"addptr_tile({base}, {off64})"
        if start_v.kind == "scalar" and start_v.const_name:
            self.fold_requests.add(start_v.const_name)  # a static start: its alignment is known per variant
        if start_v.kind == "py" and (start_v.value == 0 or consts[axis] == 1):
            # the moved base keeps the alignment cuTile Python proves: the array's 16 bytes, less what a static
            # offset (start elements of a unit stride) takes from it
            if start_v.value and arr.dtype not in ELEM_BYTES:
                raise NeedsDtype("a slice's alignment", node, "the element size needs a concrete dtype")
            nbytes = start_v.value * ELEM_BYTES.get(arr.dtype, 1)
            div = 16 if nbytes == 0 else min(16, nbytes & -nbytes)
            if div > 1:
                moved = f"unsafe {{ assume_div_by::<_, {div}>({moved}) }}"
        new_base = self.hoist(f"{name}_base", f"PointerTile<*mut {arr.dtype}, {{ [] }}>", moved)
        self.emit(f"let {name}: Tensor<{arr.dtype}, {{ [{dyn}] }}> = "
                  f"unsafe {{ make_tensor_view({new_base}, {shape}, {strides}, {arr.name}.token()) }};")
        return Val("array", name, value=Array(name, arr.ndim, arr.dtype, mutable=False, in_body=True))

    def strides_of(self, arr: Array) -> str:
        """The array's strides (cutile has no accessor: the module gets the `tensor_strides_N` compiler op)."""
        name = f"{arr.name}_strides"
        if name not in self.prologue.view_names:
            self.prologue.view_names.add(name)
            consts = self.stride_constants.get(arr.name, [None] * arr.ndim)
            dims = ", ".join(str(c) if c is not None else "-1" for c in consts)
            self.prologue.lines.append(f"let {name}: Array<{{ [{dims}] }}> = tensor_strides_{arr.ndim}({arr.name});")
            self.helpers.add(arr.ndim)
        return name

    def tma_hint(self, node: ast.expr, what: str) -> bool | None:
        """allow_tma=: True/None keep cutile's default (TMA allowed), noted as the approximation it is; False is
        tma::Disabled."""
        v = self.expr(node, "")
        if v.kind == "py" and v.value is None:
            return None
        if v.kind != "py" or not isinstance(v.value, bool):
            raise Unsupported(f"{what}(..., allow_tma=) that is not a constant bool", node)
        if v.value:
            self.approximate(f"{what}(..., allow_tma=True): cutile-rs' tma::Enabled writes no allow_tma hint (cuTile "
                             "Python writes allow_tma = true); both let the compiler use TMA")
        return v.value

    def approximate(self, note: str) -> None:
        """A construct translated with a named approximation: said where it happens, and once per entry."""
        if note not in self.approximations:
            self.approximations.append(note)
        self.emit(f"// approximation: {note}")

    def ct_load(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["array", "index", "shape"], {"order", "padding_mode", "latency", "allow_tma"})
        tma = self.tma_hint(args["allow_tma"], "ct.load") if "allow_tma" in args else None
        latency = None
        if "latency" in args:
            lv = self.expr(args["latency"], "")
            if lv.kind == "py" and lv.value is None:
                latency = None
            elif lv.kind == "py" and isinstance(lv.value, int) and not isinstance(lv.value, bool) and 1 <= lv.value <= 10:
                latency = lv.value
                if tma is not False:
                    self.approximate("ct.load(..., latency=N): cutile-rs' load_pipelined::<N> writes the latency "
                                     "hint without cuTile Python's allow_tma = true beside it")
            else:
                raise Unsupported("ct.load(..., latency=) that is not a constant int in 1..10", args["latency"])
        arr = self.expr(args["array"], "")
        if arr.kind != "array":
            raise Unsupported("ct.load from something that is not a kernel array parameter", args["array"])
        shape = self.dims(args["shape"])
        if not shape and arr.value.ndim > 0:
            # `shape=()`: one element, as cuTile loads it: a tile of ones at that index, reshaped to 0-d
            ones = ("1",) * arr.value.ndim
            sub = ast.copy_location(ast.Call(func=node.func, args=[args["array"], args["index"],
                                                                   ast.Tuple([ast.Constant(1)] * arr.value.ndim,
                                                                             ast.Load())],
                                             keywords=[k for k in node.keywords if k.arg not in ("shape", "index",
                                                                                                 "array")]), node)
            one = self.ct_load(sub, "")
            return self.tile(one.dtype, (), f"{paren(one.expr)}.reshape(shape![])", hint)
        padding = self.padding(args.get("padding_mode"), node)
        order = None
        if "order" in args:
            v = self.expr(args["order"], "")
            if v.kind != "py" or not isinstance(v.value, tuple):
                raise Unsupported("a load order that is not a constant tuple", args["order"])
            order = tuple(int(o) for o in v.value)
        view = self.view_for(arr.value, shape, padding, order, mutable=False, node=node)
        index = self.index_list(args["index"], len(shape))
        at = f"[{', '.join(index)}]"
        if tma is False:
            lat = f"Some({latency})" if latency is not None else "None"
            mut = "_mut" if view.mutable else ""
            expr = (f"load_view_tko{mut}(&{view.var}, {at}, ordering::Weak, scope::TileBlock, {lat}, tma::Disabled)")
            if view.mutable:
                expr = f"unsafe {{ {expr} }}"
        elif view.mutable:  # a load of an output (through its PartitionMut): an unordered load, unsafe in cutile
            lat = f"Some({latency})" if latency is not None else "None"
            expr = (f"unsafe {{ load_view_tko_mut(&{view.var}, {at}, ordering::Weak, scope::TileBlock, {lat}, "
                    f"tma::Enabled) }}")
        elif arr.value.in_body:
            # a view the kernel built (Array.slice) has no launch-time provenance, so cutile 0.5.0 cannot
            # discharge the check_partition_access of Partition::load for it: the check stays in the kernel as
            # `assert` ops (silu_and_mul on an H100: 4 asserts, 59-62 registers against 51-55 in the reference,
            # 1.08-1.10x). ct.load in cuTile Python is the plain view load, whose out-of-range tiles read padding:
            # the draft writes that op.
            lat = f"Some({latency})" if latency is not None else "None"
            expr = f"load_view_tko(&{view.var}, {at}, ordering::Weak, scope::TileBlock, {lat}, tma::Enabled)"
        elif latency is not None:
            expr = f"{view.var}.load_pipelined::<{latency}>({at})"
        else:
            expr = f"{view.var}.load({at})"
        return self.tile(arr.value.dtype, shape, expr, hint)


def _item(index: ast.expr, k: int) -> ast.expr:
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    if k >= len(items):
        raise Unsupported("an index whose length differs from the order's", index)
    return items[k]


def _block_axis(v: Val):
    """A store index component: the grid axis of the ct.bid it is, "0" for a literal 0, else None."""
    if v.kind == "py" and v.value == 0 and not isinstance(v.value, bool):
        return "0"
    return v.extra.get("bid") if v.kind == "scalar" else None
