"""Top-k gating for a mixture of experts: many tuning constants, each a ct.Constant."""
import torch
import cuda.tile as ct

from ..utils import next_power_of_2


@ct.kernel
def moe_gate_scores_kernel(hidden, weight, scores,
                           NUM_EXPERTS_PADDED_TO_POWER_OF_TWO: ct.Constant[int],
                           HIDDEN_DIMENSION_BLOCK_SIZE_FOR_REDUCTION: ct.Constant[int],
                           TOKENS_PER_THREAD_BLOCK_IN_GATING_KERNEL: ct.Constant[int],
                           NORMALIZE_ROUTING_WEIGHTS_AFTER_TOPK_SELECTION: ct.Constant[bool],
                           APPLY_SIGMOID_INSTEAD_OF_SOFTMAX_FOR_SCORES: ct.Constant[bool],
                           ROUTED_SCALING_FACTOR_NUMERATOR_FOR_SHARED_EXPERTS: ct.Constant[int],
                           ROUTED_SCALING_FACTOR_DENOMINATOR_FOR_SHARED_EXPERTS: ct.Constant[int],
                           NUMBER_OF_EXPERT_GROUPS_FOR_GROUP_LIMITED_ROUTING: ct.Constant[int],
                           TOPK_GROUPS_SELECTED_PER_TOKEN_IN_GROUPED_ROUTING: ct.Constant[int],
                           USE_FP32_ACCUMULATION_FOR_ROUTER_LOGITS_ALWAYS: ct.Constant[bool]):
    t = ct.bid(0)
    TB = TOKENS_PER_THREAD_BLOCK_IN_GATING_KERNEL
    E = NUM_EXPERTS_PADDED_TO_POWER_OF_TWO
    BK = HIDDEN_DIMENSION_BLOCK_SIZE_FOR_REDUCTION
    acc = ct.zeros((TB, E), dtype=ct.float32)
    for k in range(ct.num_tiles(hidden, axis=1, shape=(TB, BK))):
        h = ct.load(hidden, index=(t, k), shape=(TB, BK), padding_mode=ct.PaddingMode.ZERO)
        w = ct.load(weight, index=(k, 0), shape=(BK, E), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(h, w, acc)
    if APPLY_SIGMOID_INSTEAD_OF_SOFTMAX_FOR_SCORES:
        s = 1.0 / (1.0 + ct.exp(-acc))
    else:
        e = ct.exp(acc - ct.max(acc, axis=1, keepdims=True))
        s = e / ct.sum(e, axis=1, keepdims=True)
    if NORMALIZE_ROUTING_WEIGHTS_AFTER_TOPK_SELECTION:
        s = s / ct.sum(s, axis=1, keepdims=True)
    s = s * (ROUTED_SCALING_FACTOR_NUMERATOR_FOR_SHARED_EXPERTS / ROUTED_SCALING_FACTOR_DENOMINATOR_FOR_SHARED_EXPERTS)
    ct.store(scores, index=(t, 0), tile=s.astype(scores.dtype))


def moe_gate(hidden: torch.Tensor, weight: torch.Tensor, sigmoid: bool = False, renormalize: bool = True):
    tokens, dim = hidden.shape
    experts = weight.shape[1]
    e_pad = next_power_of_2(experts)
    scores = torch.empty((tokens, e_pad), dtype=torch.float32, device=hidden.device)
    ct.launch(torch.cuda.current_stream(), ((tokens + 15) // 16, 1, 1), moe_gate_scores_kernel,
              (hidden, weight, scores, e_pad, 64, 16, renormalize, sigmoid, 5, 2, 1, 1, True))
    return scores[:, :experts]
