import pytest
import torch

from training.model import BERT, GPT, TransformerConfig

CFG = TransformerConfig(vocab_size=40, context=32, n_layer=2, n_head=2, n_embd=32, n_ff=64)


def test_causal_mask_gpt_ignores_the_future_bert_does_not():
    torch.manual_seed(0)
    gpt, bert = GPT(CFG).eval(), BERT(CFG).eval()
    x = torch.randint(5, 40, (1, 20))
    y = x.clone()
    y[0, 15] = 5 if x[0, 15] != 5 else 6  # change one later character
    with torch.no_grad():
        g1, g2 = gpt(x), gpt(y)
        seg = torch.zeros_like(x)
        b1, b2 = bert(x, seg)[0], bert(y, seg)[0]
    assert torch.allclose(g1[0, :15], g2[0, :15], atol=1e-6), "earlier GPT logits must not see a later change"
    assert not torch.allclose(g1[0, 15:], g2[0, 15:], atol=1e-4)
    assert not torch.allclose(b1[0, :15], b2[0, :15], atol=1e-4), "BERT sees the whole sentence"


def test_cached_decoding_equals_full_forward():
    torch.manual_seed(0)
    gpt = GPT(CFG).eval()
    x = torch.randint(5, 40, (2, 20))
    hs = CFG.n_embd // CFG.n_head
    past = [(torch.zeros(2, CFG.n_head, CFG.context, hs), torch.zeros(2, CFG.n_head, CFG.context, hs))] * CFG.n_layer
    with torch.no_grad():
        full = gpt(x)
        out, past = gpt.forward_with_cache(x[:, :12], past, torch.tensor(0))
        steps = [out]
        for t in range(12, 20):
            before = [k.clone() for k, _ in past]
            out, past = gpt.forward_with_cache(x[:, t:t + 1], past, torch.tensor(t))
            for b, (k, _) in zip(before, past):  # row t written, the filled rows before it kept
                assert torch.equal(k[:, :, :t], b[:, :, :t]) and not torch.equal(k[:, :, t], b[:, :, t])
            steps.append(out)
    assert torch.allclose(torch.cat(steps, 1), full, atol=1e-5)


def test_bert_padding_does_not_change_real_positions():
    torch.manual_seed(0)
    bert = BERT(CFG).eval()
    x = torch.randint(5, 40, (1, 10))
    padded = torch.cat([x, torch.zeros(1, 6, dtype=torch.long)], 1)
    with torch.no_grad():
        a = bert(x, torch.zeros_like(x))
        b = bert(padded, torch.zeros_like(padded))
    assert torch.allclose(a[0], b[0][:, :10], atol=1e-5)
    assert torch.allclose(a[1], b[1], atol=1e-5)


def test_mlm_loss_ignores_unselected_positions():
    torch.manual_seed(0)
    bert = BERT(CFG)
    x = torch.randint(5, 40, (2, 12))
    seg = torch.zeros_like(x)
    labels = torch.full_like(x, -100)
    labels[0, 3] = x[0, 3]
    nsp = torch.tensor([0, 1])
    from training.objectives import MaskedLM
    from training.tokenizer import CharTokenizer
    from training.train import TrainConfig

    objective = MaskedLM(TrainConfig(family="bert"), CharTokenizer([chr(65 + i) for i in range(35)]))
    batch = {"idx": x, "segments": seg, "mlm_labels": labels, "nsp_labels": nsp}
    total, parts = objective.loss(bert, batch)
    logits = bert(x, seg)[0]
    expected = torch.nn.functional.cross_entropy(logits[0, 3:4], x[0, 3:4])
    assert torch.allclose(parts["mlm"], expected, atol=1e-6)
    assert torch.allclose(total, parts["mlm"] + parts["nsp"])
    objective.cfg.nsp = False
    assert objective.loss(bert, batch)[1]["nsp"].item() == 0.0


@pytest.mark.parametrize("causal", [True, False])
def test_bf16_attention_path_matches_the_fused_kernel(causal):
    # The written-out attention used under bf16 autocast must be the same maths as SDPA.
    from training.model import attention_written_out
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 9, 8, generator=gen) for _ in range(3))
    mask = None if causal else torch.tensor([[True] * 6 + [False] * 3, [True] * 9])[:, None, None, :]
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    got = attention_written_out(q, k, v, mask, causal)
    assert torch.allclose(got, ref, atol=1e-5)


def test_bf16_training_step_runs_and_gpt_stays_causal():
    cfg = TransformerConfig(vocab_size=20, context=16, n_layer=1, n_head=2, n_embd=16, n_ff=32)
    gpt = GPT(cfg)
    ids = torch.randint(5, 20, (2, 12))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a = gpt(ids).float()
        changed = ids.clone()
        changed[:, 8] = (changed[:, 8] - 5 + 1) % 15 + 5
        b = gpt(changed).float()
    assert torch.allclose(a[:, :8], b[:, :8], atol=1e-6)  # the future does not leak in the bf16 path either
    assert not torch.equal(a[:, 8:], b[:, 8:])
