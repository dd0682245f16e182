"""What the analysis record holds for Triton: per-kernel autotune/heuristics facts, and the reference choice
between a cuTile Python op and its Triton twin (both parts of `tileport.analysis.schema.Analysis`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class TritonConfig(BaseModel):
    """One `triton.Config` of an autotuner: its constexprs and compile options (num_warps, num_stages, ...)."""

    kwargs: dict[str, Any] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)


class TritonKernel(BaseModel):
    kernel: str
    autotune_key: list[str] = Field(default_factory=list)
    configs: list[TritonConfig] = Field(default_factory=list)  # empty: not autotuned
    heuristics: list[str] = Field(default_factory=list)  # constexprs `triton.heuristics` computes


class TritonInfo(BaseModel):
    """Set when the analysed op is a Triton op (`source.kind == "triton"`)."""

    version: str | None = None  # triton in the analysis interpreter
    kernels: list[TritonKernel] = Field(default_factory=list)
    variant_options: dict[str, dict[str, Any]] = Field(default_factory=dict)  # variant label -> num_warps, ...
    tile_ir_backend: str = ""  # what backend detection found, in words
    tile_ir_gap: str | None = None  # the IR gate's explicit gap when there is no Triton-to-Tile-IR backend


class VariantChoice(BaseModel):
    """Which side is the correctness and performance reference of one cuTile Python variant."""

    variant: str  # "kernel" or "kernel[TILE_N=1024,...]", as the cuTile Python analysis names it
    reference: Literal["cutile", "triton"]
    configs: int = 0  # paired configurations timed for it (0: not measured)
    cutile_us: float | None = None  # geometric mean of medians over those configurations
    triton_us: float | None = None
    ratio: float | None = None  # geomean of triton / cutile per configuration: < 1 means Triton is faster


class ReferenceChoice(BaseModel):
    """A cuTile Python op paired with a Triton twin; the per-variant reference."""

    cutile: str  # op paths
    triton: str
    paired_by: Literal["option", "name"]
    triton_analysis: str | None = None  # path of the Triton side's analysis.json
    status: Literal["pending_gpu", "measured"] = "pending_gpu"
    variants: list[VariantChoice] = Field(default_factory=list)
    timing: str = ""  # how the numbers were measured (the perf gate's harness)
    tile_ir_gap: str | None = None  # set when a Triton reference has no Tile IR (no backend)
    note: str = ""

    def summary(self) -> str:
        if self.status == "pending_gpu":
            return "reference cuTile Python (Triton twin paired; choice pending a GPU)"
        tri = [v for v in self.variants if v.reference == "triton"]
        return (f"reference per variant: {len(self.variants) - len(tri)} cuTile Python, {len(tri)} Triton"
                + (f" ({self.tile_ir_gap})" if tri and self.tile_ir_gap else ""))
