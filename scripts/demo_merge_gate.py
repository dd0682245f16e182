"""Approve -> merge of a real vector_add conversion, and the merge rule refusing, on a fresh git repository.

    .venv/bin/python scripts/demo_merge_gate.py prepare WORKDIR   # A and B for real; the GPU binary to carry
    (run the printed command on the GPU machine, save its output as WORKDIR/gpu-run.log; it needs tileiras there:
     from the venv's nvidia/cu13, `tar -cf - bin/tileiras | xz -3 > gpu-bundle/ti-a.tar.xz` and
     `tar -cf - bin/ptxas lib/libnvvm.so.4 | xz -3 > gpu-bundle/ti-b.tar.xz`, each under the 64 MiB a call carries)
    .venv/bin/python scripts/demo_merge_gate.py finish WORKDIR    # ingest D, then every refusal, then the merge

A and B run for real here (stage A analysis with cuda-tile/tileiras; cargo build of ports/vector_add against the
cutile crates + IR self-check), through the same stage functions `tileport run` uses. B's build also makes the
port's host program; it runs on the GPU machine, and its log (which prints the binary's sha256) is ingested as D
for the current commit only if that sha256 is the binary built here and the port's files at HEAD are the bytes it
was built from. There is no perf gate yet (issue #15), so E stays missing and the final merge goes through a
recorded override, never a pass. Every step prints the real CLI's output.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tileport.agents.record import record_result  # noqa: E402
from tileport.agents.stages import analyze as stage_a, write_kernel as stage_b  # noqa: E402
from tileport.config import load_config  # noqa: E402
from tileport.exec.toolchain import from_config  # noqa: E402
from tileport.records import ArtifactRecord, Stage, StageResult, sha256_file  # noqa: E402
from tileport.store import Store  # noqa: E402
from tileport.validators.analysis.pipeline import analyze_op  # noqa: E402
from tileport.validators.rust.build import BuildOptions, build_crate, prepare_crate  # noqa: E402
from tileport.validators.rust.reference import load_analysis  # noqa: E402
from tileport.validators.rust.selfcheck import self_check  # noqa: E402

PORT_FILES = ("kernel.rs", "host.rs", "spec.json")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def say(text: str) -> None:
    print(f"\n## {text}", flush=True)


def tileport(cfg: Path, *args: str) -> int:
    print("$ tileport " + shlex.join(args), flush=True)
    r = subprocess.run([sys.executable, "-m", "tileport", "--config", str(cfg), *args], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    for line in (r.stdout + r.stderr).rstrip().splitlines():
        print("  " + line)
    print(f"  [exit {r.returncode}]", flush=True)
    return r.returncode


class Demo:
    def __init__(self, root: Path, create: bool):
        self.root = root
        self.repo = root / "repo"
        self.cfg = root / "tileport.toml"
        if create:
            self._create()
        self.config = load_config(self.cfg)
        self.store = Store(root / "tileport.db")
        if create:
            self.cid = self.store.add_conversion("examples/vector_add.py")
            self.branch = f"tileport/vector_add-{self.cid}"
            self.wt = root / f"wt-{self.cid}"
            git(self.repo, "worktree", "add", "-q", "-b", self.branch, str(self.wt), "main")
            base = git(self.repo, "rev-parse", "main")
            self.store.update_conversion(self.cid, repo=str(self.repo), branch=self.branch, worktree=str(self.wt),
                                         base_branch="main", base_commit=base, head_commit=base, status="running")
        else:
            conv = self.store.conversions()[-1]
            self.cid, self.branch, self.wt = conv["id"], conv["branch"], Path(conv["worktree"])
        self.attempts = {s: self.store.attempts(self.cid, s) for s in "ABCDEF"}

    def _create(self) -> None:
        self.repo.mkdir(parents=True)
        git(self.repo, "init", "-q", "-b", "main")
        for k, v in (("user.name", "Demo Maintainer"), ("user.email", "maint@example.invalid")):
            git(self.repo, "config", k, v)
        (self.repo / "examples").mkdir()
        shutil.copy(REPO / "examples/vector_add.py", self.repo / "examples/vector_add.py")
        (self.repo / "README.md").write_text("kernels\n")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", "base: the cuTile Python op")
        self.cfg.write_text(f'store = "{self.root / "tileport.db"}"\ntargets = ["sm_90"]\n'
                            '[approval]\nname = "Demo Reviewer"\n')

    def commit(self, stage: str, verdict: str, paths: list[str]) -> str:
        self.attempts[stage] += 1
        git(self.wt, "add", "-A", "--", *paths)
        git(self.wt, "commit", "-q", "--allow-empty", "-m", f"tileport: stage {stage} {verdict}",
            "--trailer", f"Tileport-Stage: {stage}", "--trailer", f"Tileport-Verdict: {verdict}",
            "--trailer", f"Tileport-Attempt: {self.attempts[stage]}", "--trailer", f"Tileport-Conversion: {self.cid}")
        head = git(self.wt, "rev-parse", "HEAD")
        self.store.update_conversion(self.cid, head_commit=head)
        return head

    def record(self, result: StageResult, commit: str) -> None:
        record_result(self.store, self.cid, result.model_copy(update={"attempt": self.attempts[result.stage.value]}),
                      commit=commit)
        print(f"  recorded {result.stage.value} {result.verdict} on {commit[:10]}: {result.summary[:110]}")

    def stage_a(self) -> None:
        a = analyze_op(self.wt / "examples/vector_add.py", out_dir=self.wt / "out/vector_add", config=self.config,
                       toolchain=from_config(self.config), workers=1)
        res = stage_a.result_from_analysis(a)
        self.record(res, self.commit("A", res.verdict, ["out"]))

    def stage_b(self):
        port = self.wt / "ports/vector_add"
        port.mkdir(parents=True, exist_ok=True)
        for f in PORT_FILES:
            shutil.copy(REPO / "ports/vector_add" / f, port / f)
        opts = BuildOptions(bytecode_version=self.config.toolchain.bytecode_version,
                            toolchain=from_config(self.config))
        layout = prepare_crate(port, out=self.root / "crate")
        build = build_crate(layout, opts)
        analysis = load_analysis(self.wt / "out/vector_add")
        report = self_check(build, analysis, layout.spec, analysis_file=self.wt / "out/vector_add",
                            tileirdisasm=opts.toolchain.tileirdisasm) if build.ok else None
        res = stage_b.result_from_build(build, report)
        commit = self.commit("B", res.verdict, ["ports"])
        self.record(res, commit)
        return build, layout, commit

    def export_gpu_program(self) -> None:
        """The port's host program as built by B, stripped and xz'd for the GPU machine; remember what it is."""
        _, layout, commit = self.stage_b_result
        binary = BuildOptions().target_dir / "debug" / layout.run_bin
        out = self.root / "tprun"
        shutil.copy(binary, out)
        subprocess.run(["strip", str(out)], check=True)
        (self.root / "tprun.sha256").write_text(f"{sha256_file(out)} {commit}\n")
        bundle = REPO / "gpu-bundle"
        bundle.mkdir(exist_ok=True)
        with open(bundle / "tprun.xz", "wb") as f:
            subprocess.run(["xz", "-T2", "-9", "-c", str(out)], stdout=f, check=True)
        print(f"  host program {layout.run_bin}: sha256 {sha256_file(out)} (built on {commit[:10]})")

    def ingest_gpu_run(self) -> None:
        """D from the GPU machine's log, bound to HEAD: the log names the sha256 of the binary it ran, which must be
        the one B built here, and the port's files at HEAD must be the bytes it was built from."""
        sha, built_at = (self.root / "tprun.sha256").read_text().split()
        log = self.root / "gpu-run.log"
        text = log.read_text()
        if f"{sha}  /tmp/tprun" not in text:
            raise SystemExit("the GPU log is not of the binary built here: cannot ingest")
        for f in PORT_FILES:
            if git(self.wt, "rev-parse", f"{built_at}:ports/vector_add/{f}") != \
                    git(self.wt, "rev-parse", f"HEAD:ports/vector_add/{f}"):
                raise SystemExit(f"ports/vector_add/{f} changed since the binary that ran was built: re-run D")
        if "vector_add: all checks passed" not in text:
            raise SystemExit("the GPU run did not pass: D is FAIL")
        evidence = self.wt / "evidence/D/gpu-run.log"
        evidence.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(log, evidence)
        mism = [int(m) for m in re.findall(r"(\d+) mismatches of", text)]
        gpu = next((ln for ln in text.splitlines() if "H200" in ln or "NVIDIA" in ln), "GPU")
        res = StageResult(stage=Stage.HOST_CORRECTNESS, verdict="ALL_PASS",
                          artifacts=[ArtifactRecord.of("gpu_log", evidence)],
                          details={"device": gpu.strip(), "binary_sha256": sha, "built_at": built_at,
                                   "cases": len(mism), "mismatches": sum(mism)},
                          summary=f"{gpu.strip()}: {len(mism)} sizes, {sum(mism)} mismatches (bit-exact vs host)")
        self.record(res, self.commit("D", res.verdict, ["evidence"]))

    def gates(self) -> None:
        self.stage_a()
        self.stage_b()
        self.ingest_gpu_run()


DEVICE_COMMAND = (
    "exec > >(tee $OUT/gpu-run.log) 2>&1; nvidia-smi --query-gpu=name,driver_version,compute_cap "
    "--format=csv,noheader; mkdir -p /opt/ti && for f in gpu-bundle/ti-*.tar.xz; do tar -xJf $f -C /opt/ti; done; "
    "unset CUDA_HOME CUDA_PATH; export PATH=/opt/ti/bin:$PATH CUTILE_TILEIRAS_PATH=/opt/ti/bin/tileiras; "
    "xz -dc gpu-bundle/tprun.xz > /tmp/tprun && chmod +x /tmp/tprun && sha256sum /tmp/tprun; "
    "cd /tmp && ./tprun; echo rc=$?")


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("prepare", "finish"):
        print(__doc__)
        return 2
    root = Path(sys.argv[2]).resolve()
    if sys.argv[1] == "prepare":
        d = Demo(root, create=True)
        say("A and B for real on the conversion branch; B's host program goes to the GPU machine")
        d.stage_a()
        d.stage_b_result = d.stage_b()
        d.export_gpu_program()
        print(f"\nnow run on the GPU machine (carry gpu-bundle/), save the output as {root}/gpu-run.log:\n"
              f"{DEVICE_COMMAND}")
        return 0
    d = Demo(root, create=False)
    cid, cfg = str(d.cid), d.cfg
    say("D: the GPU run of the binary B built, ingested for the current commit")
    d.ingest_gpu_run()
    print(git(d.repo, "log", "--format=  %h %s  [%(trailers:key=Tileport-Stage,valueonly,separator=%x2C)]",
              f"main..{d.branch}"))

    say("1. no perf run, no approval: refused")
    tileport(cfg, "merge", cid)
    say("2. an override is off by default")
    tileport(cfg, "approve", cid, "--override", "E", "--reason", "no perf gate yet")
    say("3. a rejection needs a reason; then it refuses")
    tileport(cfg, "reject", cid)
    tileport(cfg, "reject", cid, "--reason", "want to see the ragged tile case first")
    tileport(cfg, "merge", cid)
    say("4. approved, but E still missing")
    tileport(cfg, "approve", cid, "--comment", "ragged case checked in the H200 log")
    tileport(cfg, "merge", cid)
    say("5. a human commit on the branch: every gate and the approval are stale")
    (d.wt / "ports/vector_add/kernel.rs").write_text((d.wt / "ports/vector_add/kernel.rs").read_text()
                                                     + "// reviewed\n")
    git(d.wt, "commit", "-qam", "comment the kernel")
    d.store.update_conversion(d.cid, head_commit=git(d.wt, "rev-parse", "HEAD"))
    tileport(cfg, "merge", cid)
    say("   revert the edit (a new commit: the port bytes that ran on the H200 again), re-run A, B, re-ingest D")
    git(d.wt, "revert", "--no-edit", "HEAD")  # back to the bytes that ran on the GPU, as a new commit
    d.gates()
    tileport(cfg, "merge", cid, "--check")
    say("6. evidence changed after the run: an error, not a pass")
    run_d = d.store.latest_verdicts(d.cid)["D"]["id"]
    log = Path(d.store.stage_artifacts(run_d)[0]["path"])  # the store's read-only copy of the GPU log
    saved = log.read_text()
    log.chmod(0o644)
    log.write_text(saved.replace("0 mismatches of 1048576", "0 mismatches of 1048"))
    tileport(cfg, "merge", cid, "--check")
    log.write_text(saved)
    log.chmod(0o444)
    say("7. the target moved in code the gates judged: refused, rebase offered")
    vec = d.repo / "examples/vector_add.py"
    vec.write_text(vec.read_text() + "\n# upstream edit\n")
    git(d.repo, "commit", "-qam", "upstream: edit the op")
    tileport(cfg, "merge", cid, "--check")
    git(d.repo, "revert", "--no-edit", "HEAD")
    (d.repo / "CHANGES.md").write_text("docs only\n")
    git(d.repo, "add", "CHANGES.md")
    git(d.repo, "commit", "-qm", "docs: changelog")
    say("   after upstream reverted it and added docs only: no longer a blocker")
    tileport(cfg, "merge", cid, "--check")
    say("8. override E with a reason (enabled in config), recorded as an override; then merge")
    cfg.write_text(cfg.read_text() + "allow_override = true\n")
    tileport(cfg, "approve", cid, "--override", "E", "--reason",
             "no perf gate yet (#15); correctness bit-exact on the H200", "--comment", "ship it")
    tileport(cfg, "merge", cid)
    print(git(d.repo, "log", "-1", "--format=%B", "main"))
    say("9. merged: a second merge is refused; prune removes the worktree and the merged branch")
    tileport(cfg, "merge", cid)
    tileport(cfg, "worktrees", "prune")
    tileport(cfg, "worktrees")
    print(f"\n(demo repository: {d.repo})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
