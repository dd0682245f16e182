"""The contract every layer shares (pydantic): stage results with typed per-stage details, the verdict enums (the
one list), commands, artifacts, gates, approvals. Routing reads only structured fields; `summary` is for humans."""

from tileport.records._core import (ApprovalRecord, ArtifactRecord, CommandRecord, Decision, GateEvidence,
                                    GateRecord, GateStatus, MergeOutcome, StageResult, TokenUsage, sha256_file, utcnow)
from tileport.records.details import (DETAILS, AnalyzeDetails, CorrectnessDetails, DiagnosisDetails, FeedbackItem,
                                      IRPair, PerfDetails, PerfRowDetails, ReferenceDetails, ReferenceVariant,
                                      StageDetails, WriteKernelDetails, details_of)
from tileport.records.verdicts import (GATE_PASSES, PASSING, SELF_CHECK_PASSES, STAGE_VERDICTS, VERDICTS,
                                       AnalyzeVerdict, CorrectnessVerdict, DiagnosisVerdict, FailClass,
                                       PerfDiagnosisVerdict, PerfVerdict, Stage, WriteKernelVerdict)

__all__ = [
    "ApprovalRecord", "ArtifactRecord", "CommandRecord", "Decision", "GateEvidence", "GateRecord", "GateStatus",
    "MergeOutcome", "StageResult", "TokenUsage", "sha256_file", "utcnow",
    "DETAILS", "AnalyzeDetails", "CorrectnessDetails", "DiagnosisDetails", "FeedbackItem", "IRPair", "PerfDetails",
    "PerfRowDetails", "ReferenceDetails", "ReferenceVariant", "StageDetails", "WriteKernelDetails", "details_of",
    "GATE_PASSES", "PASSING", "SELF_CHECK_PASSES", "STAGE_VERDICTS", "VERDICTS", "AnalyzeVerdict",
    "CorrectnessVerdict", "DiagnosisVerdict", "FailClass", "PerfDiagnosisVerdict", "PerfVerdict", "Stage",
    "WriteKernelVerdict",
]
