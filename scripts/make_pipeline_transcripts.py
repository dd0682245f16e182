"""Writes the scripted-writer transcripts `tileport run --model scripted:NAME` replays in the pipeline tests.

They are recorded conversations of the kernel writer (stage B) and the diagnoser (stage C) porting
examples/vector_add.py; tool results are not recorded here because the pipeline runs the real tools (cargo,
cutile, tileiras, the IR self-check) and the transcript only checks that what the model would have read came
back (`last_message_contains`). Token counts are plausible, not measured. Run: python scripts/make_pipeline_transcripts.py
"""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tileport" / "local_models" / "transcripts"
SPEC = (ROOT / "ports" / "vector_add" / "spec.json").read_text(encoding="utf-8")
SPEC = json.dumps({**json.loads(SPEC), "host": False}, indent=1)

KERNEL = """#[cutile::module]
pub mod vector_add {{
    use cutile::core::*;

    #[cutile::entry()]
    fn add<const B: i32>(
        z: &mut Tensor<f32, {{ [B] }}>,
        x: &Tensor<f32, {{ [-1] }}>,
        y: &Tensor<f32, {{ [-1] }}>,
    ) {{
        let tx = x.load_like(z);
        let ty = y.load_like(z);
{body}
    }}
}}
"""
GOOD = KERNEL.format(body="        z.store(tx + ty);")
F16 = KERNEL.format(body="        let sum: Tile<f16, { [B] }> = tx + ty;\n        z.store(sum);")
SUB = KERNEL.format(body="        z.store(tx - ty);")
WRITER_TOOLS = ["write_kernel", "cargo_build"]


def call(name, args, usage, expect, content=""):
    return {"expect": expect, "reply": {"content": content, "tool_calls": [{"name": name, "arguments": args}],
                                        "usage": usage}}


def verdict(v, summary, builds, usage, contains):
    return {"expect": {"response_format": "KernelWriterVerdict", "last_role": "tool", "last_message_contains": contains},
            "reply": {"content": json.dumps({"verdict": v, "summary": summary, "build_attempts": builds}),
                      "usage": usage}}


def first_write(source, spec=SPEC):
    return call("write_kernel", {"source": source, "spec": spec}, {"prompt_tokens": 2100, "completion_tokens": 420},
                {"tool_choice": "required", "tools": WRITER_TOOLS, "last_role": "user",
                 "last_message_contains": "vector_add_kernel"})


def write(source, after, content=""):
    return call("write_kernel", {"source": source}, {"prompt_tokens": 2900, "completion_tokens": 260},
                {"tool_choice": "required", "last_role": "tool", "last_message_contains": after}, content)


def build():
    return call("cargo_build", {}, {"prompt_tokens": 2500, "completion_tokens": 12},
                {"tool_choice": "required", "last_role": "tool", "last_message_contains": "wrote src/kernel.rs"})


def save(name, description, exchanges):
    data = {"name": name, "description": description, "model": "tileport-coder", "max_model_len": 32768,
            "exchanges": exchanges}
    (OUT / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


save("pipeline_vector_add_rustc_fix",
     "tileport run, stage B on examples/vector_add.py: the first kernel annotates the sum as f16 for f32 tensors; "
     "the real build returns rustc E0308, the writer fixes the annotation, the build is OK, verdict COMPILED.",
     [first_write(F16), build(),
      write(GOOD, "error[E0308]", "The tensors are f32, so tx + ty is an f32 tile: annotate nothing, store the sum."),
      build(),
      verdict("COMPILED", "vector_add::add ported; E0308 fixed (sum tile was f16)", 2,
              {"prompt_tokens": 3300, "completion_tokens": 60}, "OK:")])

save("pipeline_vector_add_selfcheck_fix",
     "tileport run, B -> C -> B on examples/vector_add.py: the first kernel subtracts instead of adding; it compiles, "
     "the real IR self-check fails (FAIL_FIXABLE), the diagnoser names the kernel and the edit, the writer's second "
     "attempt adds, the self-check passes.",
     [first_write(SUB), build(),
      verdict("COMPILED", "compiles", 1, {"prompt_tokens": 3100, "completion_tokens": 40}, "OK:"),
      {"expect": {"response_format": "Diagnosis", "last_role": "user", "last_message_contains": "FAIL_FIXABLE"},
       "reply": {"content": json.dumps({"verdict": "FAIL_FIXABLE", "owner": "kernel",
                                        "next_edit": "kernel.rs: store tx + ty, not tx - ty (the reference adds)",
                                        "evidence": "reference addf, port subf"}),
                 "usage": {"prompt_tokens": 4200, "completion_tokens": 90}}},
      {**first_write(GOOD, None), "expect": {"tool_choice": "required", "tools": WRITER_TOOLS, "last_role": "user",
                                             "last_message_contains": "store tx + ty"}},
      build(),
      verdict("COMPILED", "adds now", 1, {"prompt_tokens": 3000, "completion_tokens": 40}, "OK:")])

save("pipeline_vector_add_caps",
     "tileport run, caps: both B attempts write a kernel with the f16 annotation and never fix it; each attempt "
     "spends its three builds on the same rustc error, the second FAIL_COMPILE reaches B's cap (2) and the "
     "conversion stops FAILED naming it.",
     [first_write(F16), build(), write(F16, "error[E0308]"), build(), write(F16, "error[E0308]"), build(),
      verdict("FAIL_COMPILE", "still E0308", 3, {"prompt_tokens": 3000, "completion_tokens": 30}, "error[E0308]"),
      {**first_write(F16, None), "expect": {"tool_choice": "required", "tools": WRITER_TOOLS, "last_role": "user",
                                            "last_message_contains": "E0308"}},
      build(), write(F16, "error[E0308]"), build(), write(F16, "error[E0308]"), build(),
      verdict("FAIL_COMPILE", "still E0308", 3, {"prompt_tokens": 3000, "completion_tokens": 30}, "error[E0308]")])
