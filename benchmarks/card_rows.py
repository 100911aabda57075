"""The shipped models' rows of the documents' tables, from their cards (benchmarks/tables.py prints
them between its markers): the number formats, a card's size and training in words, and each
family's held-out rows."""
from __future__ import annotations


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def thousands(n: int) -> str:
    return f"{n:,}"


def _size(card: dict) -> str:
    c = card["config"]
    return f"{c['n_layer']} layers, {c['n_head']} heads, width {c['n_embd']}, feed-forward {c['n_ff']}"


def _training(card: dict) -> str:
    t, c = card["training"], card["config"]
    how = ", ".join(x for x in (f"{t.get('threads')} thread" + ("s" if t.get("threads", 1) != 1 else ""),
                                t.get("precision"), "torch.compile" if t.get("compile") else None) if x)
    unit = {"gpt": "characters", "bert": "pairs", "t5": "lines", "plm": "lines"}.get(card["family"], "rows")
    minutes = "CPU-minutes" if t.get("clock") == "cpu" else "minutes"
    return (f"{thousands(t['steps'])} steps of {t['batch_size']} {unit} x {c['context']} in "
            f"{t['seconds'] / 60:.0f} {minutes} of training ({how}; {t.get('machine', 'CPU')})")


def t5_rows(t5: dict) -> list[str]:
    """T5 (span corruption): hidden characters written back right, against the same model untrained
    and the most common character (BERT on the same spans: the `spans` table)."""
    v, t = t5["evaluation"]["validation"], t5["evaluation"]["test"]
    rows = [f"| T5 | hidden characters written back right (top-1; 15 % hidden in spans of 3), teacher-forced: after the "
            f"true characters of the span so far, as in training; {_size(t5)}, "
            f"{t5['parameters'] / 1e6:.2f}M parameters, context {t5['config']['context']}, {_training(t5)} | "
            f"{pct(v['span_char_top1'])} | {pct(t['span_char_top1'])} |"]
    if "free_running" in v and "free_running" in t:  # what the /spans page shows (issue 54)
        fv, ft = v["free_running"], t["free_running"]
        rows.append(f"| T5 | written freely, as the /spans page does (greedy, after its own characters so far; the first "
                    f"{thousands(ft['windows'])} windows): characters right / spans exact | {pct(fv['span_char_top1'])} / "
                    f"{pct(fv['spans_exact'])} | {pct(ft['span_char_top1'])} / {pct(ft['spans_exact'])} |")
    return rows + [f"| T5 | same architecture, random init / always the most common character | "
                   f"{pct(v['random_init']['span_char_top1'])} / {pct(v['unigram_baseline']['span_char_top1'])} | "
                   f"{pct(t['random_init']['span_char_top1'])} / {pct(t['unigram_baseline']['span_char_top1'])} |"]


def plm_rows(plm: dict) -> list[str]:
    """PLM (permutation LM): the last 15 % of a random order guessed right, against the same baselines."""
    v, t = plm["evaluation"]["validation"], plm["evaluation"]["test"]
    return [f"| PLM | last 15 % of a random order guessed right (top-1, two streams), each from the true characters "
            f"earlier in the order; {_size(plm)}, "
            f"{plm['parameters'] / 1e6:.2f}M parameters, context {plm['config']['context']}, {_training(plm)} | "
            f"{pct(v['predicted_top1'])} | {pct(t['predicted_top1'])} |",
            f"| PLM | same architecture, random init / always the most common character | "
            f"{pct(v['random_init']['predicted_top1'])} / {pct(v['unigram_baseline']['predicted_top1'])} | "
            f"{pct(t['random_init']['predicted_top1'])} / {pct(t['unigram_baseline']['predicted_top1'])} |"]


def electra_rows(el: dict) -> list[str]:
    """The Objectives page's discriminator: what it catches, against always answering "original"."""
    v, t = el["evaluation"]["validation"], el["evaluation"]["test"]
    rows = [f"| ELECTRA | replaced characters caught (p > 50 %); {_size(el)}, {el['parameters'] / 1e6:.2f}M parameters "
            f"with its generator, context {el['config']['context']}, {_training(el)} | "
            f"{pct(v['replaced_recall'])} | {pct(t['replaced_recall'])} |",
            f"| ELECTRA | right at every character / always \"original\" | {pct(v['detection_accuracy'])} / "
            f"{pct(v['always_original_accuracy'])} | {pct(t['detection_accuracy'])} / {pct(t['always_original_accuracy'])} |",
            f"| ELECTRA | its generator's masked top-1 | {pct(v['generator_masked_top1'])} | {pct(t['generator_masked_top1'])} |"]
    if "auc" in v:
        rows += [f"| ELECTRA | area under the ROC curve / original characters flagged (p > 50 %) | "
                 f"{v['auc']:.3f} / {pct(v['original_flagged'])} | {t['auc']:.3f} / {pct(t['original_flagged'])} |"]
    if "random_fill" in v:
        rv, rt = v["random_fill"], t["random_fill"]
        rows += [f"| ELECTRA | the same positions filled with random characters: caught / AUC | "
                 f"{pct(rv['replaced_recall'])} / {rv['auc']:.3f} | {pct(rt['replaced_recall'])} / {rt['auc']:.3f} |"]
    init = el.get("training", {}).get("init_from")
    if init:
        rows += [f"| ELECTRA | its discriminator started from {init} (see docs/models.md) | | |"]
    return rows
