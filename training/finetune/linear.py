"""The fine-tune lab's linear arms: a logistic regression fitted to convergence (scikit-learn's
lbfgs) with class weights (`class_weight="balanced"`: a rare tag's mistakes cost as much in total
as the common one's, issue 32), its regularisation strength C picked from `C_GRID` by the task's
score on the same validation slice the trained arms choose on (training/finetune/loop.py; the
log-loss breaks ties). The result says when the chosen C is at an edge of the grid ("C_at_edge").

    probe   the linear probe as the literature defines it: the pretrained encoder frozen, a linear
            model on its features (the mean of the positions for a whole text, each position's
            hidden state for a per-character task), standardised. It tests what the features
            already hold. It is exported as a classifier: the regression becomes the head.
    ngram   no pretraining at all, the honest "old way": a logistic regression on the character
            1-3-grams of the same labelled examples (for a whole text, tf-idf weighted counts of
            every 1-, 2- and 3-character piece; for a per-character task, the characters, pairs and
            triples in a window of 3 on each side of the character).
"""
from __future__ import annotations

import warnings

import numpy as np
import torch

from .loop import TaskData
from .model import Classifier
from .stats import val_score

C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0)
WINDOW = 3


class ProbeFeatures:
    """The frozen pretrained encoder's features of every example of a task, computed once:
    per text (N, C) for a whole-input task; per text a (len, C) array of its scored characters."""

    def __init__(self, model: Classifier, data: TaskData, eval_batch: int = 64):
        self.kind = data.kind
        self.train, self.test = (self._features(model, data, rows, eval_batch) for rows in (data.train, data.test))

    @staticmethod
    @torch.no_grad()
    def _features(model, data, rows, size) -> list[np.ndarray]:
        out = []
        model.eval()
        for i in range(0, len(rows), size):
            b = data.batch(rows[i:i + size])
            f = model.features(b.input_ids, b.token_type_ids)
            if data.kind == "sequence":
                out += list(f.numpy())
            else:
                out += [f[j][b.labels[j] != -100].numpy() for j in range(len(f))]
        return out


def _fit(X, y, Xv, yv, n_labels: int, seed: int, scale: bool, majority: int | None = None):
    """The class-weighted regression with the C that scores best on the validation slice (log-loss
    breaks ties): (model, scaler, C, iterations, C at an edge of the grid)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler(with_mean=scale).fit(X) if scale else None
    has_val = Xv is not None and len(yv) > 0
    Xs = scaler.transform(X) if scale else X
    Xvs = (scaler.transform(Xv) if scale else Xv) if has_val else None
    if len(set(y.tolist())) < 2:  # one label among the examples to learn from: that label always
        return _Constant(int(y[0]), n_labels), scaler, None, 0, False
    best = None
    for C in (C_GRID if has_val else (1.0,)):  # no slice (--steps): scikit-learn's default C
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = LogisticRegression(C=C, max_iter=2000, random_state=seed, class_weight="balanced").fit(Xs, y)
        key = ((val_score(clf.predict(Xvs), yv, majority), -log_loss(yv, clf.predict_proba(Xvs), labels=clf.classes_))
               if has_val else (0.0, 0.0))
        if best is None or key > best[0]:
            best = (key, clf, C)
    _, clf, C = best
    edge = has_val and C in (C_GRID[0], C_GRID[-1])
    return clf, scaler, C, int(np.max(clf.n_iter_)), bool(edge)


class _Constant:
    def __init__(self, label: int, n_labels: int):
        self.label, self.classes_ = label, np.arange(n_labels)

    def predict(self, X):
        return np.full(X.shape[0], self.label)


def _stack(feats: list[np.ndarray], targets: list, kind: str):
    if not feats:
        return None, np.zeros(0, dtype=np.int64)
    if kind == "sequence":
        return np.stack(feats), np.asarray(targets, dtype=np.int64)
    ys = [np.asarray(t[:len(f)], dtype=np.int64) for f, t in zip(feats, targets)]
    return np.concatenate(feats), np.concatenate(ys)


def _regroup(flat: np.ndarray, lengths: list[int]) -> list:
    out, at = [], 0
    for n in lengths:
        out.append([int(v) for v in flat[at:at + n]])
        at += n
    return out


def _maj(data: TaskData) -> int | None:
    return None if data.kind == "sequence" else data.majority


def probe(feats: ProbeFeatures, data: TaskData, fit: list[int], val: list[int], seed: int):
    """(regression, scaler, predictions on the test examples, info)."""
    X, y = _stack([feats.train[i] for i in fit], [data.train[i][1] for i in fit], data.kind)
    Xv, yv = _stack([feats.train[i] for i in val], [data.train[i][1] for i in val], data.kind)
    clf, scaler, C, iters, edge = _fit(X, y, Xv, yv, len(data.labels), seed, scale=True, majority=_maj(data))
    Xt, _ = _stack(feats.test, [t for _, t in data.test], data.kind)
    guess = clf.predict(scaler.transform(Xt))
    preds = guess.tolist() if data.kind == "sequence" else _regroup(guess, [len(f) for f in feats.test])
    return clf, scaler, preds, {"steps": iters, "C": C, "C_at_edge": edge}


def head_from_regression(model: Classifier, clf, scaler, n_labels: int) -> None:
    """Put a fitted probe into the classifier's head (logits = W x + b on unscaled features), so it
    exports and serves like any other arm."""
    W = np.zeros((n_labels, model.head.classifier.in_features))
    b = np.zeros(n_labels)
    if isinstance(clf, _Constant):
        b[clf.label] = 1.0
    else:
        coef, icpt = clf.coef_, clf.intercept_
        if coef.shape[0] == 1:  # binary: p(class 1) = sigmoid(w x + b) = softmax([0, w x + b])
            coef, icpt = np.vstack([np.zeros_like(coef), coef]), np.concatenate([[0.0], icpt])
        scale = scaler.scale_ if scaler is not None else np.ones(W.shape[1])
        mean = scaler.mean_ if scaler is not None and scaler.mean_ is not None else np.zeros(W.shape[1])
        for row, cls in enumerate(clf.classes_):
            W[cls] = coef[row] / scale
            b[cls] = icpt[row] - float(np.dot(coef[row], mean / scale))
        for cls in set(range(n_labels)) - set(int(c) for c in clf.classes_):
            b[cls] = -1e4  # a label never seen among its examples: never answered
    with torch.no_grad():
        model.head.classifier.weight.copy_(torch.tensor(W, dtype=torch.float32))
        model.head.classifier.bias.copy_(torch.tensor(b, dtype=torch.float32))
    model.eval()


def char_windows(text: str) -> list[dict]:
    """Per character: the characters, pairs and triples within WINDOW on each side (^/$ past the ends)."""
    padded = "^" * WINDOW + text + "$" * WINDOW
    out = []
    for i in range(len(text)):
        c = i + WINDOW
        f = {}
        for o in range(-WINDOW, WINDOW + 1):
            f[f"1{o}{padded[c + o]}"] = 1
            if o < WINDOW:
                f[f"2{o}{padded[c + o:c + o + 2]}"] = 1
            if o < WINDOW - 1:
                f[f"3{o}{padded[c + o:c + o + 3]}"] = 1
        out.append(f)
    return out


def ngram(data: TaskData, fit: list[int], val: list[int], seed: int):
    """(predictions on the test examples, info): character n-grams, no pretraining."""
    keep = data.context - 2  # score the same characters as the model arms
    if data.kind == "sequence":
        from sklearn.feature_extraction.text import TfidfVectorizer

        vec = TfidfVectorizer(analyzer="char", ngram_range=(1, 3), sublinear_tf=True, lowercase=False)
        X = vec.fit_transform([data.train[i][0] for i in fit])
        Xv = vec.transform([data.train[i][0] for i in val]) if val else None
        y, yv = (np.array([data.train[i][1] for i in idx], dtype=np.int64) for idx in (fit, val))
        clf, _, C, iters, edge = _fit(X, y, Xv, yv, len(data.labels), seed, scale=False)
        return clf.predict(vec.transform([t for t, _ in data.test])).tolist(), {"steps": iters, "C": C, "C_at_edge": edge}
    from sklearn.feature_extraction import DictVectorizer

    def rows(items):
        feats, ys = [], []
        for text, tags in items:
            feats += char_windows(text[:keep])
            ys += list(tags[:keep])
        return feats, np.array(ys, dtype=np.int64)

    F, y = rows([data.train[i] for i in fit])
    Fv, yv = rows([data.train[i] for i in val])
    vec = DictVectorizer()
    X = vec.fit_transform(F)
    clf, _, C, iters, edge = _fit(X, y, vec.transform(Fv) if Fv else None, yv, len(data.labels), seed, scale=False,
                                  majority=data.majority)
    Ft, _ = rows(data.test)
    guess = clf.predict(vec.transform(Ft))
    return _regroup(guess, [min(len(t), keep) for t, _ in data.test]), {"steps": iters, "C": C, "C_at_edge": edge}
