import json, base64, subprocess, os, sys
B = '/work/ti135/nvidia/cu13/bin'
env = dict(os.environ); env.pop('CUDA_HOME', None); env.pop('CUDA_PATH', None)
OUT = '/work/main/.gpu/ab'
def cubin(op, h, flags, name):
    d = json.load(open(f'/tmp/r2/{op}.json'))
    bc = f'/tmp/bcx/{name}.tilebc'
    open(bc, 'wb').write(base64.b64decode(d['bytecode'][h]))
    out = f'{OUT}/{name}.cubin'
    subprocess.run([B + '/tileiras', '--gpu-name', 'sm_90', *flags, '-o', out, bc], check=True, env=env)
    return '.gpu/ab/' + name + '.cubin'
REF = ['-O3', '--lineinfo']; PORT = ['--opt-level', '3']
def v1(t, shape):  # cuTile Python v1: ptr, shape, strides (row-major contiguous)
    st = [1]
    for d in reversed(shape[1:]): st.insert(0, st[0] * d)
    return [["ptr", t]] + [["i32", d] for d in shape] + [["i32", s] for s in st]
def rs_mut(t, shape, part):
    pst = [1]
    for d in reversed(part[1:]): pst.insert(0, pst[0] * d)
    return v1(t, shape) + [["i32", d] for d in part] + [["i32", s] for s in pst]
def entry(op, h):
    d = json.load(open(f'/tmp/r2/{op}.json'))
    for r in d['perf']['rows']:
        if r['bytecode'].get('ref') == [h]: return r['ref_kernels'][0]
        if r['bytecode'].get('port') == [h]: return r['port_kernels'][0]
cases = []
def rms(dt, m, n, rh, ph, tag):
    cases.append({"name": f"rms_norm {dt} {m}x{n}", "grid": [m, 1, 1], "block": [256, 1, 1],
      "tensors": {"x": {"shape": [m, n], "dtype": dt}, "w": {"shape": [n], "dtype": dt}, "out": {"shape": [m, n], "dtype": dt}},
      "wrapper": {"module": "examples/rms_norm.py", "function": "rms_norm", "kwargs": {"x": "@x", "weight": "@w", "eps": 1e-6}, "label": "ref ct.launch"},
      "cubins": [
        {"label": "ref cubin", "path": cubin('rms_norm', rh, REF, f'rms_{tag}_ref'), "entry": entry('rms_norm', rh),
         "args": v1("x", [m, n]) + v1("w", [n]) + v1("out", [m, n]) + [["f32", 1e-6]]},
        {"label": "port cubin", "path": cubin('rms_norm', ph, PORT, f'rms_{tag}_port'), "entry": entry('rms_norm', ph),
         "args": v1("x", [m, n]) + v1("w", [n]) + rs_mut("out", [m, n], [1, 4096]) + [["f32", 1e-6]]},
        {"label": "ref cubin again", "path": cubin('rms_norm', rh, REF, f'rms_{tag}_ref'), "entry": entry('rms_norm', rh),
         "args": v1("x", [m, n]) + v1("w", [n]) + v1("out", [m, n]) + [["f32", 1e-6]]}]})
rms('float16', 4096, 4096, 'c3df62d28123e77c', '381bf71307e737e4', 'f16_4096')
rms('float16', 1000, 768, '23834039617e0c65', 'd5923e238abb5cf1', 'f16_1000')
cases.append({"name": "softmax float16 4096x4096", "grid": [4096, 1, 1], "block": [256, 1, 1],
  "tensors": {"x": {"shape": [4096, 4096], "dtype": "float16"}, "out": {"shape": [4096, 4096], "dtype": "float16"}},
  "wrapper": {"module": "examples/softmax.py", "function": "softmax", "kwargs": {"x": "@x"}, "label": "ref ct.launch"},
  "cubins": [
    {"label": "ref cubin", "path": cubin('softmax', '1642967a20bc0509', REF, 'sm_ref'), "entry": entry('softmax', '1642967a20bc0509'),
     "args": v1("x", [4096, 4096]) + v1("out", [4096, 4096]) + [["f32", 1.0]]},
    {"label": "port cubin", "path": cubin('softmax', 'a4f6124ac7c84a78', PORT, 'sm_port'), "entry": entry('softmax', 'a4f6124ac7c84a78'),
     "args": v1("x", [4096, 4096]) + rs_mut("out", [4096, 4096], [1, 4096]) + [["f32", 1.0]]}]})
cases.append({"name": "layer_norm float32 256x1024", "grid": [256, 1, 1], "block": [256, 1, 1],
  "tensors": {"x": {"shape": [256, 1024], "dtype": "float32"}, "w": {"shape": [1024], "dtype": "float32"}, "b": {"shape": [1024], "dtype": "float32"}, "out": {"shape": [256, 1024], "dtype": "float32"}},
  "wrapper": {"module": "tests/data/draft_heldout/layer_norm.py", "function": "layer_norm", "kwargs": {"x": "@x", "weight": "@w", "bias": "@b"}, "label": "ref ct.launch"},
  "cubins": [
    {"label": "ref cubin", "path": cubin('layer_norm', '02fbc245bf8613a0', REF, 'ln_ref'), "entry": entry('layer_norm', '02fbc245bf8613a0'),
     "args": v1("x", [256, 1024]) + v1("w", [1024]) + v1("b", [1024]) + v1("out", [256, 1024]) + [["f32", 1e-5]]},
    {"label": "port cubin", "path": cubin('layer_norm', '7551a031650acd1e', PORT, 'ln_port'), "entry": entry('layer_norm', '7551a031650acd1e'),
     "args": v1("x", [256, 1024]) + v1("w", [1024]) + v1("b", [1024]) + rs_mut("out", [256, 1024], [1, 1024]) + [["f32", 1e-5]]}]})
json.dump({"cases": cases}, open(OUT + '/plan.json', 'w'), indent=1)
print(len(cases), 'cases')
