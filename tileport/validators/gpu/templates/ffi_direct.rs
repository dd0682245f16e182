
// ---------------------------------------------------------------------------------------------- the direct path
//
// The direct path of the launch signatures cutile has launched before (issue 34 item 3): up to TP_FAST_RECORDS
// signatures per entry symbol, each recorded the second time it is launched. After the slow path (cutile's
// launcher: launch-site probe, validation, argument packet) succeeded on a warm signature that no record serves,
// the same launch is run once more through that path under stream capture on a private stream (captured, never
// executed): the captured kernel node names the CUfunction cutile loaded, its block and shared memory, and the
// parameter values exactly as cutile marshalled them (cuFuncGetParamInfo gives each one's offset and size). The
// record is kept only if the parameter count is what the entry's signature implies (a `&Tensor` 1 + 2 x rank:
// pointer, shape, strides; a `&mut Tensor` 1 + 4 x rank: pointer, shape, strides, partition shape and strides;
// a pointer or scalar 1) and every tensor's pointer sits in its slot.
//
// A later call equal to a record in everything but the tensors' addresses (`FastSig::matches`, field by field:
// device, grid, generics, ranks, shapes, strides, partitions, address alignment class, scalar values; no hashing)
// copies the recorded bytes, writes the new addresses into the pointer slots and calls cuLaunchKernel on the
// caller's stream: no allocation, no lock (atomic and OnceLock reads), no string, and the context set only when
// the calling thread's current one is another. What cutile validated for the recorded launch (shapes, grid,
// launch checks) holds for it, because only addresses of the same alignment differ. Anything else takes the slow
// path; a direct launch the driver refuses is counted and retried through the slow path, which reports its error.
// The CUfunction stays loaded while cutile's kernel cache holds it; nothing in this library clears that cache.
// TILEPORT_FFI_DIRECT=0: nothing is recorded, every launch goes through cutile (to compare).
//
// An entry with integer scalar parameters is also compiled once more per record without the divisibility hints
// cutile's launcher infers from those scalars' values (HINT_FREE: cuTile Python assumes nothing of a scalar), and
// the record launches that function: the direct path runs the port under exactly the reference's assumptions.
// Its parameters must sit where the captured function's do (cuFuncGetParamInfo); if not, or if the compile fails,
// the record keeps the captured function (tp_fast_note says why).

pub const TP_FAST_MAX_PARAMS: usize = 128;
pub const TP_FAST_SLOTS: usize = 128; // 16-byte slots of parameter values (2 KiB)
pub const TP_FAST_RECORDS: usize = 16; // launch signatures with a direct path, per entry symbol
pub const TP_FAST_TRIES: usize = 64; // captures tried per entry symbol (kept or refused), then no more
pub const TP_FAST_MAX_TENSORS: usize = 16;
pub const TP_FAST_MAX_SCALARS: usize = 32;
pub const TP_FAST_MAX_GENERICS: usize = 256;

/// The modes of an entry's launch body (see the generated entries).
pub const LAUNCH: u8 = 0;
pub const CAPTURE: u8 = 1;
pub const HINT_FREE: u8 = 2;

/// Keeps a function this library compiled loaded for the life of the process (a record launches it); its handle.
fn keep_function(f: Arc<cutile::cuda_core::Function>) -> usize {
    static KEPT: Mutex<Vec<Arc<cutile::cuda_core::Function>>> = Mutex::new(Vec::new());
    let raw = unsafe { f.cu_function() } as usize;
    if let Ok(mut k) = KEPT.lock() {
        k.push(f);
    }
    raw
}

/// One tensor of a recorded launch as the caller passed it; its address left out, its alignment class kept.
#[derive(Clone, Copy)]
struct FastTensor {
    ndim: i64,
    align: u32,
    shape: [i64; TP_MAX_RANK],
    strides: [i64; TP_MAX_RANK],
    part: [i64; TP_MAX_RANK],
}

/// What a launch must equal to take a record's direct path: everything the caller passed but tensor addresses.
struct FastSig {
    device: i32,
    grid: [u32; 3],
    glen: usize, // usize::MAX: no generics string
    generics: [u8; TP_FAST_MAX_GENERICS],
    nt: usize,
    tensors: [FastTensor; TP_FAST_MAX_TENSORS],
    ns: usize,
    scalars: [(i64, u64); TP_FAST_MAX_SCALARS],
}

fn align_class(ptr: u64) -> u32 {
    ptr.trailing_zeros().min(4)
}

impl FastSig {
    /// The signature of one launch, or why it cannot have a record.
    unsafe fn of(device: i32, grid: *const u32, generics: *const c_char, tensors: *const TpTensor, nt: i32,
                 scalars: *const TpScalar, ns: i32) -> Result<Box<FastSig>, String> {
        if grid.is_null() || nt < 0 || ns < 0 || (nt > 0 && tensors.is_null()) || (ns > 0 && scalars.is_null()) {
            return Err("no grid, or tensors / scalars missing".into());
        }
        let (nt, ns) = (nt as usize, ns as usize);
        if nt > TP_FAST_MAX_TENSORS || ns > TP_FAST_MAX_SCALARS {
            return Err(format!("{nt} tensors and {ns} scalars: more than the direct path records"));
        }
        let empty = FastTensor { ndim: 0, align: 0, shape: [0; TP_MAX_RANK], strides: [0; TP_MAX_RANK],
                                 part: [0; TP_MAX_RANK] };
        let g = std::slice::from_raw_parts(grid, 3);
        let mut sig = Box::new(FastSig {
            device, grid: [g[0], g[1], g[2]], glen: usize::MAX, generics: [0; TP_FAST_MAX_GENERICS], nt,
            tensors: [empty; TP_FAST_MAX_TENSORS], ns, scalars: [(0, 0); TP_FAST_MAX_SCALARS],
        });
        if !generics.is_null() {
            let text = CStr::from_ptr(generics).to_bytes();
            if text.len() >= TP_FAST_MAX_GENERICS {
                return Err(format!("generics of {} bytes: more than the direct path records", text.len()));
            }
            sig.generics[..text.len()].copy_from_slice(text);
            sig.glen = text.len();
        }
        for i in 0..nt {
            let t = &*tensors.add(i);
            if t.ndim < 0 || t.ndim as usize > TP_MAX_RANK || t.ptr == 0 {
                return Err(format!("tensor {i}: rank {} or a null pointer", t.ndim));
            }
            sig.tensors[i] = FastTensor { ndim: t.ndim, align: align_class(t.ptr), shape: t.shape,
                                          strides: t.strides, part: t.part };
        }
        for i in 0..ns {
            let s = &*scalars.add(i);
            sig.scalars[i] = (s.i, s.f.to_bits());
        }
        Ok(sig)
    }

    /// Whether a launch equals this signature in everything but its tensors' addresses (each of the same
    /// alignment class, none null). Reads the caller's generics byte by byte, never past its NUL.
    #[inline]
    unsafe fn matches(&self, device: i32, grid: *const u32, generics: *const c_char, tensors: *const TpTensor,
                      nt: i32, scalars: *const TpScalar, ns: i32) -> bool {
        if device != self.device || nt as usize != self.nt || ns as usize != self.ns || nt < 0 || ns < 0
            || grid.is_null() {
            return false;
        }
        if *grid != self.grid[0] || *grid.add(1) != self.grid[1] || *grid.add(2) != self.grid[2] {
            return false;
        }
        if generics.is_null() != (self.glen == usize::MAX) {
            return false;
        }
        if !generics.is_null() {
            let g = generics as *const u8;
            for i in 0..self.glen {
                if *g.add(i) != self.generics[i] {
                    return false;
                }
            }
            if *g.add(self.glen) != 0 {
                return false;
            }
        }
        if self.nt > 0 && tensors.is_null() || self.ns > 0 && scalars.is_null() {
            return false;
        }
        for i in 0..self.nt {
            let (t, r) = (&*tensors.add(i), &self.tensors[i]);
            let n = r.ndim as usize;
            if t.ndim != r.ndim || t.ptr == 0 || align_class(t.ptr) != r.align || t.shape[..n] != r.shape[..n]
                || t.strides[..n] != r.strides[..n] || t.part[..n] != r.part[..n] {
                return false;
            }
        }
        for i in 0..self.ns {
            let s = &*scalars.add(i);
            if (s.i, s.f.to_bits()) != self.scalars[i] {
                return false;
            }
        }
        true
    }
}

pub struct Fast {
    sig: Box<FastSig>,
    func: usize,
    ctx: usize,
    block: [u32; 3],
    shmem: u32,
    nparams: usize,
    offsets: [u16; TP_FAST_MAX_PARAMS],
    ptr_slots: [(u16, u16); TP_MAX_RANK * 4], // (tensor index, byte offset of its pointer)
    nptrs: usize,
    bytes: [u128; TP_FAST_SLOTS],
}

/// One entry symbol's records: `n` published records in `recs` (each set once, never changed), and the
/// signatures a capture was tried for (hashed; consulted only on the slow path, under its lock, which also
/// serialises the recording).
pub struct FastSlot {
    n: std::sync::atomic::AtomicUsize,
    recs: [OnceLock<Box<Fast>>; TP_FAST_RECORDS],
    tried: Mutex<Vec<u64>>,
}

impl FastSlot {
    pub const fn new() -> Self {
        FastSlot { n: std::sync::atomic::AtomicUsize::new(0), recs: [const { OnceLock::new() }; TP_FAST_RECORDS],
                   tried: Mutex::new(Vec::new()) }
    }
}

/// 0 direct launches, 1 signatures recorded for the direct path, 2 captures refused (tp_fast_note says why),
/// 3 direct launches the driver refused (retried through cutile), 4 records launching a function compiled without
/// integer scalar hints, 5 records whose hint-free compile failed (they launch cutile's function).
static FAST_STATS: [std::sync::atomic::AtomicU64; 6] = [const { std::sync::atomic::AtomicU64::new(0) }; 6];

fn fast_note() -> &'static Mutex<String> {
    static NOTE: OnceLock<Mutex<String>> = OnceLock::new();
    NOTE.get_or_init(|| Mutex::new(String::new()))
}

#[no_mangle]
pub unsafe extern "C" fn tp_fast_stats(out: *mut u64, n: usize) -> i32 {
    if !out.is_null() {
        for (i, slot) in FAST_STATS.iter().enumerate().take(n) {
            *out.add(i) = slot.load(std::sync::atomic::Ordering::Relaxed);
        }
    }
    FAST_STATS.len() as i32
}

#[no_mangle]
pub unsafe extern "C" fn tp_fast_note(err: *mut c_char, len: usize) -> i32 {
    let note = fast_note().lock().map(|s| s.clone()).unwrap_or_default();
    write_err(err, len, &note);
    note.len() as i32
}

/// Everything of a launch but its tensors' addresses (their alignment class is in), hashed: which signatures a
/// capture was tried for (slow path only).
unsafe fn exact_key(device: i32, grid: *const u32, generics: *const c_char, tensors: *const TpTensor, nt: i32,
                    scalars: *const TpScalar, ns: i32) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (device, nt, ns).hash(&mut h);
    if !grid.is_null() {
        std::slice::from_raw_parts(grid, 3).hash(&mut h);
    }
    if !generics.is_null() {
        CStr::from_ptr(generics).to_bytes().hash(&mut h);
    }
    if !tensors.is_null() && nt > 0 {
        for t in std::slice::from_raw_parts(tensors, nt.min(TP_FAST_MAX_TENSORS as i32) as usize) {
            let r = t.ndim.clamp(0, TP_MAX_RANK as i64) as usize;
            (t.ndim, align_class(t.ptr), &t.shape[..r], &t.strides[..r], &t.part[..r]).hash(&mut h);
        }
    }
    if !scalars.is_null() && ns > 0 {
        for s in std::slice::from_raw_parts(scalars, ns.min(TP_FAST_MAX_SCALARS as i32) as usize) {
            (s.i, s.f.to_bits()).hash(&mut h);
        }
    }
    h.finish()
}

fn fast_refuse(why: String) -> bool {
    FAST_STATS[2].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Ok(mut n) = fast_note().lock() {
        *n = why;
    }
    false
}

fn direct_off() -> bool {
    static OFF: OnceLock<bool> = OnceLock::new(); // TILEPORT_FFI_DIRECT=0: every launch through cutile (to compare)
    *OFF.get_or_init(|| std::env::var("TILEPORT_FFI_DIRECT").map(|v| v == "0").unwrap_or(false))
}

/// Records the direct path of one launch signature (see above): runs `body` (the slow path, given a stream) once
/// under capture. `ptrs`: (tensor index, parameter index of its pointer); `nparams`: the parameter count the
/// entry's signature implies. At most TP_FAST_TRIES signatures per entry symbol are tried, each once, and at most
/// TP_FAST_RECORDS kept; returns whether this one was kept.
unsafe fn fast_capture(slot: &FastSlot, device: i32, grid: *const u32, generics: *const c_char,
                       tensors: *const TpTensor, nt: i32, scalars: *const TpScalar, ns: i32,
                       ptrs: &[(usize, usize)], nparams: usize, hint_free: bool,
                       body: &(dyn Fn(usize, u8) -> Result<usize, Refused> + Sync)) -> bool {
    use std::sync::atomic::Ordering;
    if direct_off() || slot.n.load(Ordering::Acquire) >= TP_FAST_RECORDS {
        return false;
    }
    let Ok(mut tried) = slot.tried.lock() else { return false };
    let key = exact_key(device, grid, generics, tensors, nt, scalars, ns);
    let n = slot.n.load(Ordering::Acquire);
    if n >= TP_FAST_RECORDS || tried.len() >= TP_FAST_TRIES || tried.contains(&key) {
        return false;
    }
    tried.push(key);
    let sig = match FastSig::of(device, grid, generics, tensors, nt, scalars, ns) {
        Ok(s) => s,
        Err(why) => return fast_refuse(why),
    };
    if context(device).is_err() {
        return fast_refuse("no context".into());
    }
    let mut cur: cu::CUcontext = std::ptr::null_mut();
    cu::cuCtxGetCurrent(&mut cur);
    let mut s: cu::CUstream = std::ptr::null_mut();
    let r = cu::cuStreamCreate(&mut s, cu::CUstream_flags_enum_CU_STREAM_NON_BLOCKING as _);
    if r != 0 || s.is_null() {
        return fast_refuse(format!("cuStreamCreate: {r}"));
    }
    let r = cu::cuStreamBeginCapture_v2(s, cu::CUstreamCaptureMode_enum_CU_STREAM_CAPTURE_MODE_RELAXED);
    if r != 0 {
        cu::cuStreamDestroy_v2(s);
        return fast_refuse(format!("cuStreamBeginCapture: {r}"));
    }
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(s as usize, CAPTURE)));
    let mut g: cu::CUgraph = std::ptr::null_mut();
    let r = cu::cuStreamEndCapture(s, &mut g);
    cu::cuStreamDestroy_v2(s);
    let made = match (ran, r) {
        (Ok(Ok(_)), 0) if !g.is_null() => fast_record(sig, cur, g, tensors, ptrs, nparams),
        (Ok(Err(Refused(_, m))), _) => Err(format!("the captured slow path refused: {m}")),
        (Err(_), _) => Err("the captured slow path panicked".into()),
        (_, r) => Err(format!("cuStreamEndCapture: {r}")),
    };
    if !g.is_null() {
        cu::cuGraphDestroy(g);
    }
    let made = match made {
        Ok(f) if hint_free => Ok(fast_hint_free(f, body)),
        other => other,
    };
    match made {
        Ok(f) => {
            let _ = slot.recs[n].set(f);
            slot.n.store(n + 1, Ordering::Release); // published after the record is set
            FAST_STATS[1].fetch_add(1, Ordering::Relaxed);
            true
        }
        Err(why) => fast_refuse(why),
    }
}

unsafe fn fast_record(sig: Box<FastSig>, ctx: cu::CUcontext, g: cu::CUgraph, tensors: *const TpTensor,
                      ptrs: &[(usize, usize)], nparams: usize) -> Result<Box<Fast>, String> {
    let mut n: usize = 0;
    cu::cuGraphGetNodes(g, std::ptr::null_mut(), &mut n);
    let mut nodes = vec![std::ptr::null_mut(); n];
    if n == 0 || cu::cuGraphGetNodes(g, nodes.as_mut_ptr(), &mut n) != 0 {
        return Err("no node captured".into());
    }
    let kernels: Vec<cu::CUgraphNode> = nodes.into_iter().filter(|&nd| {
        let mut ty: cu::CUgraphNodeType = 0 as _;
        cu::cuGraphNodeGetType(nd, &mut ty) == 0 && ty == cu::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_KERNEL
    }).collect();
    if kernels.len() != 1 {
        return Err(format!("{} kernel nodes captured, one expected", kernels.len()));
    }
    let mut p: cu::CUDA_KERNEL_NODE_PARAMS = std::mem::zeroed();
    let r = cu::cuGraphKernelNodeGetParams_v2(kernels[0], &mut p);
    if r != 0 || p.func.is_null() || p.kernelParams.is_null() || !p.extra.is_null() {
        return Err(format!("kernel node: rc {r}, function or parameters missing"));
    }
    if [p.gridDimX, p.gridDimY, p.gridDimZ] != sig.grid {
        return Err("the captured grid is not the launch's".into());
    }
    let mut f = Box::new(Fast {
        sig, func: p.func as usize, ctx: ctx as usize, block: [p.blockDimX, p.blockDimY, p.blockDimZ],
        shmem: p.sharedMemBytes, nparams: 0, offsets: [0; TP_FAST_MAX_PARAMS],
        ptr_slots: [(0, 0); TP_MAX_RANK * 4], nptrs: 0, bytes: [0; TP_FAST_SLOTS],
    });
    let base = f.bytes.as_mut_ptr() as *mut u8;
    let mut count = 0usize;
    while count <= TP_FAST_MAX_PARAMS {
        let (mut off, mut size) = (0usize, 0usize);
        if cu::cuFuncGetParamInfo(p.func, count, &mut off, &mut size) != 0 {
            break;
        }
        if count == TP_FAST_MAX_PARAMS || off + size > TP_FAST_SLOTS * 16 || off > u16::MAX as usize {
            return Err("too many parameter bytes for the direct path".into());
        }
        let v = *p.kernelParams.add(count) as *const u8;
        if v.is_null() {
            return Err(format!("parameter {count} has no value"));
        }
        std::ptr::copy_nonoverlapping(v, base.add(off), size);
        f.offsets[count] = off as u16;
        if let Some(&(ti, _)) = ptrs.iter().find(|&&(_, pi)| pi == count) {
            let want = (*tensors.add(ti)).ptr;
            if size != 8 || std::ptr::read_unaligned(base.add(off) as *const u64) != want {
                return Err(format!("parameter {count} is not tensor {ti}'s pointer"));
            }
            if f.nptrs == f.ptr_slots.len() {
                return Err("too many pointers".into());
            }
            f.ptr_slots[f.nptrs] = (ti as u16, off as u16);
            f.nptrs += 1;
        }
        count += 1;
    }
    if count != nparams || f.nptrs != ptrs.len() {
        return Err(format!("{count} kernel parameters, the entry's signature implies {nparams}"));
    }
    f.nparams = count;
    Ok(f)
}

/// The record `f` launching its entry compiled without integer scalar hints (`HINT_FREE`), compiled on a thread
/// with a large stack (cutile's JIT recurses deeply) on a private stream; `f` unchanged when that fails.
unsafe fn fast_hint_free(mut f: Box<Fast>, body: &(dyn Fn(usize, u8) -> Result<usize, Refused> + Sync)) -> Box<Fast> {
    let mut s: cu::CUstream = std::ptr::null_mut();
    let r = cu::cuStreamCreate(&mut s, cu::CUstream_flags_enum_CU_STREAM_NON_BLOCKING as _);
    if r != 0 || s.is_null() {
        fast_hint_free_failed(format!("cuStreamCreate: {r}"));
        return f;
    }
    let stream = s as usize;
    let got = std::thread::scope(|sc| {
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn_scoped(sc, move || std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(stream, HINT_FREE))))
            .map(|h| h.join())
    });
    cu::cuStreamSynchronize(s);
    cu::cuStreamDestroy_v2(s);
    let func = match got {
        Ok(Ok(Ok(Ok(func)))) if func != 0 => func,
        Ok(Ok(Ok(Err(Refused(_, m))))) => {
            fast_hint_free_failed(m);
            return f;
        }
        _ => {
            fast_hint_free_failed("the compile panicked or its thread did not start".into());
            return f;
        }
    };
    for i in 0..=f.nparams {
        let (mut off, mut size) = (0usize, 0usize);
        let r = cu::cuFuncGetParamInfo(func as cu::CUfunction, i, &mut off, &mut size);
        let same = if i < f.nparams { r == 0 && off == f.offsets[i] as usize } else { r != 0 };
        if !same {
            fast_hint_free_failed(format!("its parameter {i} is not where the captured function's is"));
            return f;
        }
    }
    f.func = func;
    FAST_STATS[4].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    f
}

fn fast_hint_free_failed(why: String) {
    FAST_STATS[5].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Ok(mut n) = fast_note().lock() {
        *n = format!("compiling without integer scalar hints: {why}; the record launches cutile's function");
    }
}

/// What the direct path did with one launch.
enum Direct {
    Launched,
    NoRecord,
    Refused, // the driver refused the recorded launch: the slow path runs it (and reports its error)
}

/// The direct launch: a record whose signature the launch equals, its parameters with the launch's addresses.
unsafe fn fast_launch(slot: &FastSlot, stream: *mut c_void, device: i32, grid: *const u32, generics: *const c_char,
                      tensors: *const TpTensor, nt: i32, scalars: *const TpScalar, ns: i32) -> Direct {
    use std::sync::atomic::Ordering;
    let n = slot.n.load(Ordering::Acquire);
    if n == 0 {
        return Direct::NoRecord;
    }
    let t0 = if profiling() { Some(std::time::Instant::now()) } else { None };
    let Some(f) = slot.recs[..n].iter().filter_map(|r| r.get())
        .find(|f| f.sig.matches(device, grid, generics, tensors, nt, scalars, ns)) else {
        return Direct::NoRecord;
    };
    let mut bytes = f.bytes;
    let base = bytes.as_mut_ptr() as *mut u8;
    for &(ti, off) in &f.ptr_slots[..f.nptrs] {
        std::ptr::write_unaligned(base.add(off as usize) as *mut u64, (*tensors.add(ti as usize)).ptr);
    }
    let mut params: [*mut c_void; TP_FAST_MAX_PARAMS] = [std::ptr::null_mut(); TP_FAST_MAX_PARAMS];
    for i in 0..f.nparams {
        params[i] = base.add(f.offsets[i] as usize) as *mut c_void;
    }
    let t1 = t0.map(|t| { prof_add(8, t.elapsed().as_nanos() as u64); std::time::Instant::now() });
    let mut cur: cu::CUcontext = std::ptr::null_mut();
    if cu::cuCtxGetCurrent(&mut cur) != 0 || cur as usize != f.ctx {
        cu::cuCtxSetCurrent(f.ctx as cu::CUcontext);
        if t0.is_some() {
            prof_add(10, 1);
        }
    }
    let r = cu::cuLaunchKernel(f.func as cu::CUfunction, *grid, *grid.add(1), *grid.add(2), f.block[0], f.block[1],
                               f.block[2], f.shmem, stream as cu::CUstream, params.as_mut_ptr(), std::ptr::null_mut());
    if let Some(t) = t1 {
        prof_add(9, t.elapsed().as_nanos() as u64);
    }
    if r != 0 {
        FAST_STATS[3].fetch_add(1, Ordering::Relaxed);
        if let Ok(mut note) = fast_note().lock() {
            *note = format!("direct launch: cuLaunchKernel returned {r}; launched through cutile instead");
        }
        return Direct::Refused;
    }
    FAST_STATS[0].fetch_add(1, Ordering::Relaxed);
    Direct::Launched
}
