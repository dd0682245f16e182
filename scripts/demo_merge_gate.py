"""Approve -> merge of a real matmul conversion, and every refusal of the merge rule, on a fresh git repository.

    .venv/bin/python scripts/demo_merge_gate.py prepare WORKDIR [--no-wheels]
        a fresh repo holding examples/matmul.py; `tileport run` converts it for real: A (analysis, cuda-tile
        exports), B (a scripted writer writes the hand-written port ports/matmul, then the real cargo build
        against the cutile crates and the IR self-check), D stops at BLOCKED(env) on a CPU machine. Then
        `tileport gate pack ID` for the branch HEAD into WORKDIR/gpu/gate, with tileport's source and the wheels
        a GPU host lacks (as scripts/gpu-gate-ports.sh pack). Prints the exact GPU command (also in
        WORKDIR/GPU-COMMAND.txt); its results.json goes to WORKDIR/results.json.
    .venv/bin/python scripts/demo_merge_gate.py finish WORKDIR [--results FILE]
        every refusal through the real CLI (its one line and exit status, and --json), the ingest of the GPU
        results for that commit, then approve -> merge with the gate summary in the merge commit.

The scripted writer is a named fake model (a transcript replayed through the real writer loop): it writes the
hand-written port's files; everything that judges them is real. With results that do not pass (a CPU machine's
`tileport gate run` answers BLOCKED(env)), `finish` shows the merge staying refused and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PORT = ROOT / "ports" / "matmul"
OP = ROOT / "examples" / "matmul.py"
APPROVER = "Ada Reviewer"
CARRY = "gpu-bundle/merge-demo/gpu"  # where the lead's device call finds WORKDIR/gpu (WORKDIR = gpu-bundle/merge-demo)
# the wheels the H200 host lacks for tileport's CLI (as scripts/gpu-gate-ports.sh pack), cp312 manylinux
WHEELS = ("pydantic-core==2.50.5", "pydantic==2.14.4", "annotated-types==0.8.0", "typing-inspection==0.4.5",
          "sqlite-utils==4.2.1", "sqlite-fts4==1.0.3", "platformdirs==4.14.9", "tenacity==9.1.2", "tree-sitter==0.26.1",
          "tree-sitter-rust==0.24.2")


def say(text: str) -> None:
    print(f"\n## {text}", flush=True)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _brief_gate(gr: dict) -> dict:
    keep = {k: gr.get(k) for k in ("name", "status", "verdict", "stage_run_id", "reason") if gr.get(k) not in (None, "")}
    if gr.get("commit"):
        keep["commit"] = gr["commit"][:12]
    if gr.get("evidence"):
        keep["evidence"] = f"{len(gr['evidence'])} file(s), digest sha256:{(gr.get('evidence_sha256') or '')[:16]}"
    return keep


def brief_json(text: str) -> list[str]:
    """--json output shown one key a line, each gate on one line with its evidence counted (the full document is
    what the command printed; only this display is shortened)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return text.splitlines()
    lines = ["{  (--json; gates shortened for display: evidence files counted, commits to 12 digits)"]
    items = list(doc.items())
    for i, (k, v) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if k == "gates" and isinstance(v, list):
            lines.append(' "gates": [')
            lines += [f"   {json.dumps(_brief_gate(gr))}{',' if j < len(v) - 1 else ''}" for j, gr in enumerate(v)]
            lines.append(f" ]{comma}")
        elif k == "approval" and isinstance(v, dict):
            lines.append(f' "approval": {json.dumps({a: b for a, b in v.items() if a != "gates"})}{comma}')
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v)}{comma}")
    return lines + ["}"]


def tileport(repo: Path, *args: str, show: bool = True, timeout: float = 1800) -> subprocess.CompletedProcess:
    """The real CLI, in the demo repository (its tileport.toml and store), output shown indented with the exit."""
    r = subprocess.run([sys.executable, "-m", "tileport", *args], cwd=repo, capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if show:
        print("$ tileport " + shlex.join(args), flush=True)
        out = brief_json(r.stdout) if "--json" in args and r.stdout.strip() else r.stdout.rstrip().splitlines()
        for line in out + r.stderr.rstrip().splitlines():
            print("  " + line)
        print(f"  [exit {r.returncode}]", flush=True)
    return r


def transcript() -> dict:
    """The scripted writer: write the hand-written port (kernel.rs + spec.json), build it, say COMPILED."""
    kernel = (PORT / "kernel.rs").read_text(encoding="utf-8")
    spec = (PORT / "spec.json").read_text(encoding="utf-8")
    tools = ["write_kernel", "cargo_build"]
    return {
        "name": "demo_matmul_handwritten",
        "description": "NAMED FAKE model for scripts/demo_merge_gate.py: stage B writes ports/matmul (the hand-written "
                       "port) through the real writer loop; the real cargo build and IR self-check judge it.",
        "model": "scripted-handwritten-port", "max_model_len": 32768,
        "exchanges": [
            {"expect": {"tool_choice": "required", "tools": tools, "last_role": "user",
                        "last_message_contains": "matmul_kernel"},
             "reply": {"content": "", "tool_calls": [{"name": "write_kernel",
                                                       "arguments": {"source": kernel, "spec": spec}}],
                       "usage": {"prompt_tokens": 0, "completion_tokens": 0}}},
            {"expect": {"tool_choice": "required", "last_role": "tool", "last_message_contains": "wrote src/kernel.rs"},
             "reply": {"content": "", "tool_calls": [{"name": "cargo_build", "arguments": {}}],
                       "usage": {"prompt_tokens": 0, "completion_tokens": 0}}},
            {"expect": {"response_format": "KernelWriterVerdict", "last_role": "tool", "last_message_contains": "OK:"},
             "reply": {"content": json.dumps({"verdict": "COMPILED", "summary": "ports/matmul written as is",
                                              "build_attempts": 1}),
                       "usage": {"prompt_tokens": 0, "completion_tokens": 0}}},
        ]}


def gpu_command(gpu: str = CARRY) -> str:
    return ("set -o pipefail; exec > >(tee $OUT/gpu-run.log) 2>&1; "
            "nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader; "
            "test -x /opt/ti/bin/tileiras || { echo 'NO TILEIRAS: run the tileiras call (docs/gpu-runs.md) first'; "
            "exit 9; }; unset CUDA_HOME CUDA_PATH; export PATH=/opt/ti/bin:$PATH; "
            f"D=$PWD/{gpu}; mkdir -p /tmp/tp-site && python3 -m pip install -q --no-index --no-deps --no-compile "
            "--target /tmp/tp-site $D/whl/*.whl; export PYTHONPATH=/tmp/tp-site:/tmp/site:$D/src PYTHONUNBUFFERED=1; "
            "python3 -m tileport gate run $D/gate --timeout 240; rc=$?; cp $D/gate/results.json $OUT/results.json; "
            "echo rc=$rc")


def prepare(work: Path, wheels: bool) -> int:
    if work.exists() and any(work.iterdir()):
        print(f"demo: {work} is not empty; pass a new or empty directory", file=sys.stderr)
        return 2
    repo = work / "repo"
    repo.mkdir(parents=True)
    say(f"a fresh repository {repo}: matmul.py (examples/matmul.py) and tileport.toml")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Demo User")
    git(repo, "config", "user.email", "demo@example.invalid")
    shutil.copy(OP, repo / "matmul.py")
    (repo / "tileport.toml").write_text(f'targets = ["sm_90"]\n\n[approval]\nname = "{APPROVER}"\n')
    (repo / ".gitignore").write_text(".tileport/\n")
    git(repo, "add", "matmul.py", "tileport.toml", ".gitignore")
    git(repo, "commit", "-q", "-m", "matmul op")
    script = work / "matmul_writer.json"
    script.write_text(json.dumps(transcript(), indent=1) + "\n")

    say("tileport run: A analysis, B scripted writer + real cargo build + IR self-check, D on this machine")
    r = tileport(repo, "run", "matmul.py", "--repo", ".", "--model", f"scripted:{script}")
    if r.returncode not in (0, 1, 3):
        print("demo: `tileport run` failed; see above", file=sys.stderr)
        return 1
    conv = json.loads(tileport(repo, "status", "1", "--json", show=False).stdout)["conversion"]
    runs = json.loads(tileport(repo, "status", "1", "--json", show=False).stdout)["stage_runs"]
    if not any(x["stage"] == "B" and x["verdict"] == "COMPILED" for x in runs):
        print("demo: stage B did not compile the port; nothing to pack", file=sys.stderr)
        return 1
    print(git(repo, "log", "--format=%h %s", f"main..{conv['branch']}"))

    say(f"tileport gate pack 1: the cdylib and gate dir for HEAD {conv['head_commit'][:12]}")
    gpu = work / "gpu"
    r = tileport(repo, "gate", "pack", "1", "--out", str(gpu / "gate"))
    if r.returncode:
        return 1
    shutil.copytree(ROOT / "tileport", gpu / "src" / "tileport", ignore=shutil.ignore_patterns("__pycache__"))
    if wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_17_x86_64",
                        "--platform", "manylinux2014_x86_64", "-d", str(gpu / "whl"), *WHEELS], check=True)
    size = sum(f.stat().st_size for f in gpu.rglob("*") if f.is_file())
    cmd = gpu_command()
    (work / "GPU-COMMAND.txt").write_text(
        f"# on the GPU host, with {CARRY} carried (tileiras at /opt/ti from the call in docs/gpu-runs.md):\n"
        f"{cmd}\n# then copy its results.json to {work / 'results.json'} and run:\n"
        f"# .venv/bin/python scripts/demo_merge_gate.py finish {work}\n")
    say(f"ready: {gpu} ({size / 2**20:.1f} MiB) for commit {conv['head_commit']}")
    print(f"GPU command (carry {CARRY}):\n{cmd}")
    print(f"then: copy results.json to {work / 'results.json'}; "
          f"python scripts/demo_merge_gate.py finish {work}")
    return 0


def finish(work: Path, results: Path) -> int:
    repo = work / "repo"
    if not (repo / ".tileport" / "tileport.db").is_file():
        print(f"demo: {work} was not prepared; run `demo_merge_gate.py prepare {work}` first", file=sys.stderr)
        return 2
    if not results.is_file():
        print(f"demo: no {results}; run the GPU command in {work / 'GPU-COMMAND.txt'} and put its results.json there",
              file=sys.stderr)
        return 2
    status = json.loads(tileport(repo, "status", "1", "--json", show=False).stdout)
    conv = status["conversion"]
    branch, wt = conv["branch"], Path(conv["worktree"])
    head = git(repo, "rev-parse", branch)
    main_tip = git(repo, "rev-parse", "main")
    gate_meta = json.loads(results.read_text()).get("gate") or {}
    say(f"conversion #1 {branch} at {head[:12]}; results.json made for {str(gate_meta.get('commit'))[:12]}")
    print(git(repo, "log", "--format=%h %s", f"main..{branch}"))

    say("1. merge without an approval (and D not run on a GPU yet): refused, main untouched")
    tileport(repo, "merge", "1")
    tileport(repo, "merge", "1", "--json")

    say("2. approve while gates are open on HEAD: refused, nothing recorded")
    tileport(repo, "approve", "1", "--comment", "looks right")
    tileport(repo, "approve", "1", "--json")
    print(f"approvals recorded: {len(json.loads(tileport(repo, 'status', '1', '--json', show=False).stdout)['approvals'])}")

    say("3. an override while overrides are off ([approval] allow_override = false, the default)")
    tileport(repo, "approve", "1", "--override", "D", "E", "--reason", "the GPU run is not in yet")
    tileport(repo, "approve", "1", "--reason", "the GPU run is not in yet")

    say("4. reject: without a reason refused; with one recorded (a merge of this commit is then refused)")
    tileport(repo, "reject", "1")
    tileport(repo, "reject", "1", "--reason", "wait for the H200 run before anyone merges", "--json")
    tileport(repo, "merge", "1")

    say(f"5. ingest the GPU results for {head[:12]} (stages D and E)")
    r = tileport(repo, "gate", "ingest", str(results))
    runs = json.loads(tileport(repo, "status", "1", "--json", show=False).stdout)["stage_runs"]
    newest = {x["stage"]: x for x in runs}
    for s in ("D", "E"):
        if s in newest:
            x = newest[s]
            print(f"  {s} run #{x['id']}: {x['verdict']} on {str(x['commit'])[:12]} {json.dumps(x.get('details'))[:300]}")
    passed = r.returncode == 0 and newest.get("D", {}).get("verdict") == "ALL_PASS" \
        and newest.get("E", {}).get("verdict") == "DONE" and newest["E"]["commit"] == head
    if not passed:
        say("the gates did not pass on this commit: approve and merge stay refused")
        tileport(repo, "approve", "1")
        tileport(repo, "merge", "1")
        same = git(repo, "rev-parse", "main") == main_tip
        print(f"main untouched: {same}")
        return 1

    say("6. gates pass, but the newest decision on HEAD is the rejection: refused")
    tileport(repo, "merge", "1")
    say("7. approve HEAD (the gates it saw are recorded, with a git note on the commit)")
    tileport(repo, "approve", "1", "--comment", "6/6 cases on the H200; geomean within the gate", "--json")

    say("8. a new commit on the branch (a human edit) makes the approval and the gates stale")
    kernel = wt / "ports" / "matmul" / "kernel.rs"
    kernel.write_text(kernel.read_text() + "// reviewed\n")
    git(wt, "commit", "-q", "-am", "a human edit after the approval")
    tileport(repo, "merge", "1")
    tileport(repo, "approve", "1")
    say("   results from another commit are refused at ingest")
    tileport(repo, "gate", "ingest", str(results))
    git(repo, "branch", "-f", "demo/stray-edit", branch)
    git(wt, "reset", "-q", "--hard", head)
    print(f"(the edit is dropped: {branch} back at {head[:12]}; the edit is kept on demo/stray-edit)")
    tileport(repo, "merge", "1", "--check")

    say("9. the target branch moves under the gates (a change to the op on main): refused, rebase offered")
    op = repo / "matmul.py"
    op.write_text(op.read_text() + "\n# main moved on\n")
    git(repo, "commit", "-q", "-am", "main: an edit to the op")
    tileport(repo, "merge", "1")
    tileport(repo, "merge", "1", "--json")
    git(repo, "branch", "-f", "demo/main-moved", "main")
    git(repo, "reset", "-q", "--hard", main_tip)
    print(f"(main back at {main_tip[:12]}; the edit is kept on demo/main-moved. `tileport merge 1 --rebase` would "
          "rebase the branch, and the gates would have to run again on the new HEAD)")

    say("10. approve -> merge: every gate passed on the exact HEAD, and HEAD is approved")
    r = tileport(repo, "merge", "1", "--json")
    if r.returncode:
        return 1
    print("$ git log -1 --format=%B main")
    for line in git(repo, "log", "-1", "--format=%B", "main").splitlines():
        print("  " + line)
    print(f"$ git notes --ref=refs/notes/tileport show {head[:12]}")
    for line in git(repo, "notes", "--ref=refs/notes/tileport", "show", head).splitlines():
        print("  " + line[:400])
    say("11. merged: a second merge is refused; prune removes the merged worktree and branch")
    tileport(repo, "merge", "1")
    tileport(repo, "worktrees", "prune")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("workdir", type=Path)
    p.add_argument("--no-wheels", action="store_true", help="skip the GPU host's wheels (a CPU-only check)")
    f = sub.add_parser("finish")
    f.add_argument("workdir", type=Path)
    f.add_argument("--results", type=Path, help="results.json of the GPU run (default WORKDIR/results.json)")
    a = ap.parse_args()
    work = a.workdir.resolve()
    if a.step == "prepare":
        return prepare(work, not a.no_wheels)
    return finish(work, (a.results or work / "results.json").resolve())


if __name__ == "__main__":
    sys.exit(main())
