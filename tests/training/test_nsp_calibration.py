"""NSP's threshold: chosen on validation pairs of its own seed, folded into the head's bias, so the
model says IsNext on half of those pairs and the decision everywhere else moves with it."""
import torch

from training.evaluate import bert_eval_batches, held_out_documents
from training.nsp_calibration import CALIBRATION_SEED, calibrate_nsp, nsp_margins
from training.train import load_checkpoint


def test_calibration_answers_isnext_on_half_and_shifts_only_the_isnext_bias(tiny_runs_dir):
    _, model, tok, state = load_checkpoint(tiny_runs_dir / "bert" / "ckpt.pt")
    docs = held_out_documents(None, state["train_config"]["corpus"], "validation")
    with torch.no_grad():
        model.nsp_head.bias[0] += 3.0  # a head that leans hard towards IsNext
    before = {k: v.clone() for k, v in model.state_dict().items()}
    info = calibrate_nsp(model, tok, docs, n_pairs=200)
    after = model.state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed == ["nsp_head.bias"]
    assert after["nsp_head.bias"][1] == before["nsp_head.bias"][1]
    assert info["before"]["says_isnext"] > 0.9
    assert abs(info["after"]["says_isnext"] - 0.5) <= 0.02
    assert info["split"] == "validation" and info["seed"] == CALIBRATION_SEED
    # The same pairs, run again through the changed model, give the reported share.
    batches = bert_eval_batches(tok, docs, model.cfg.context, 200, seed=CALIBRATION_SEED)
    assert abs(float((nsp_margins(model, batches) > 0).float().mean()) - info["after"]["says_isnext"]) < 1e-6
