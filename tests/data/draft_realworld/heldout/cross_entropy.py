"""Cross-entropy loss per row: chunked log-sum-exp, the target logit by a gather, ignore_index by a run-time test."""
import torch
import cuda.tile as ct


@ct.kernel
def cross_entropy_kernel(Logits, Labels, Loss, n_cols: int, ignore_index: int, TILE_V: ct.Constant[int]):
    row = ct.bid(0)
    label = ct.load(Labels, index=(row,), shape=())
    m = ct.full((1,), -1e30, dtype=ct.float32)
    s = ct.zeros((1,), dtype=ct.float32)
    for j in range(ct.cdiv(n_cols, TILE_V)):
        x = ct.load(Logits, index=(row, j), shape=(1, TILE_V), padding_mode=ct.PaddingMode.NEG_INF)
        x = ct.reshape(x.astype(ct.float32), (TILE_V,))
        m_new = ct.maximum(m, ct.max(x, axis=0, keepdims=True))
        s = s * ct.exp(m - m_new) + ct.sum(ct.exp(x - m_new), axis=0, keepdims=True)
        m = m_new
    target = ct.gather(Logits, (row, label), padding_value=0.0).astype(ct.float32)
    loss = m + ct.log(s) - target
    if label == ignore_index:
        loss = ct.zeros((1,), dtype=ct.float32)
    ct.store(Loss, index=(row,), tile=loss)


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    M, V = logits.shape
    loss = torch.empty((M,), device=logits.device, dtype=torch.float32)
    ct.launch(torch.cuda.current_stream(), (M, 1, 1), cross_entropy_kernel, (logits, labels, loss, V, ignore_index, 1024))
    return loss


if __name__ == "__main__":
    for dt in (torch.float16, torch.float32):
        logits = torch.randn(64, 5000, device="cuda", dtype=dt)
        labels = torch.randint(0, 5000, (64,), device="cuda", dtype=torch.int32)
        cross_entropy(logits, labels)
