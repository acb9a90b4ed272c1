"""The probing paper's word-count baselines (Conneau et al. 2018, Table 2, top block): NB-uni-tfidf and
NB-bi-tfidf, a multinomial Naive Bayes classifier on the tf-idf of the sentence's words (and bigrams).

They see words, not vectors, so they are "task-level" encoders: the runner hands them the whole task
(``run_task``) instead of encoding sentences. The smoothing ``alpha`` is chosen on the dev split (or by
k-fold on train where there is no dev split), as the suite chooses its L2 penalty.
"""
from __future__ import annotations

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import StratifiedKFold
from sklearn.naive_bayes import MultinomialNB
from sklearn.pipeline import make_pipeline

ALPHAS = (0.01, 0.1, 1.0)


def _pipeline(ngram_max: int, alpha: float):
    return make_pipeline(TfidfVectorizer(tokenizer=str.split, token_pattern=None, lowercase=True,
                                         ngram_range=(1, ngram_max)), MultinomialNB(alpha=alpha))


def _accuracy(model, sentences, y) -> float:
    return 100.0 * float(np.mean(model.predict(sentences) == np.asarray(y)))


def nb_tfidf_split(ngram_max: int, train_x, train_y, dev_x, dev_y, test_x, test_y,
                   alphas: tuple[float, ...] = ALPHAS) -> tuple[float, float, float]:
    """(dev accuracy, test accuracy, alpha) of NB-tfidf on a train/dev/test task, ``alpha`` chosen on dev (the
    first best: the smallest on ties). The tf-idf is fitted once on train: what ``_pipeline`` fits for every alpha."""
    vectorizer = _pipeline(ngram_max, alphas[0]).steps[0][1]
    train, dev, test = vectorizer.fit_transform(train_x), vectorizer.transform(dev_x), vectorizer.transform(test_x)
    best: tuple[float, float, float] | None = None
    for alpha in alphas:
        model = MultinomialNB(alpha=alpha).fit(train, train_y)
        devacc = _accuracy(model, dev, dev_y)
        if best is None or devacc > best[0]:
            best = (devacc, _accuracy(model, test, test_y), alpha)
    assert best is not None, "at least one alpha"
    return best


class NBTfidfEncoder:
    """``encoder=nb_uni_tfidf`` (``ngram_max=1``) or ``encoder=nb_bi_tfidf`` (``ngram_max=2``)."""

    def __init__(self, ngram_max: int = 1, alphas: tuple[float, ...] = ALPHAS) -> None:
        if ngram_max not in (1, 2):
            raise ValueError(f"ngram_max={ngram_max}: 1 (NB-uni-tfidf) or 2 (NB-bi-tfidf)")
        self.ngram_max, self.alphas = int(ngram_max), tuple(float(a) for a in alphas)

    def _kfold_alpha(self, x, y, k: int, seed: int) -> tuple[float, float]:
        x, y = np.asarray(x, dtype=object), np.asarray(y)
        folds = list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(x, y))
        scores = []
        for a in self.alphas:
            accs = [_accuracy(_pipeline(self.ngram_max, a).fit(list(x[tr]), y[tr]), list(x[te]), y[te])
                    for tr, te in folds]
            scores.append((float(np.mean(accs)), a))
        best = max(scores, key=lambda s: s[0])
        return best[1], best[0]

    def run_task(self, spec, data, params) -> dict:
        """SentEval's result keys (``devacc``, ``acc`` in %, ``ndev``, ``ntest``) plus the chosen ``alpha``."""
        if getattr(params, "dev_only", False):
            raise ValueError(f"{self.describe()['name']} has no dev-only mode: "
                             "it is a fixed baseline, not a model to select")
        if spec.features is not None or spec.regime not in ("split", "kfold", "nested"):
            raise ValueError(f"{self.describe()['name']} classifies single sentences; {spec.name} is a "
                             f"{'pair' if spec.features else spec.regime} task")
        s = data.splits
        if spec.regime == "split":
            devacc, acc, alpha = nb_tfidf_split(self.ngram_max, s["train"].a, s["train"].y, s["dev"].a, s["dev"].y,
                                                s["test"].a, s["test"].y, self.alphas)
            return {"devacc": round(devacc, 2), "acc": round(acc, 2), "ndev": len(s["dev"]), "ntest": len(s["test"]),
                    "alpha": alpha}
        if spec.regime == "kfold":
            alpha, devacc = self._kfold_alpha(s["train"].a, s["train"].y, params.kfold, params.seed)
            model = _pipeline(self.ngram_max, alpha).fit(s["train"].a, s["train"].y)
            return {"devacc": round(devacc, 2), "acc": round(_accuracy(model, s["test"].a, s["test"].y), 2),
                    "ndev": len(s["train"]), "ntest": len(s["test"]), "alpha": alpha}
        x, y = np.asarray(s["all"].a, dtype=object), s["all"].y
        accs, devs = [], []
        for tr, te in StratifiedKFold(n_splits=params.kfold, shuffle=True, random_state=1111).split(x, y):
            alpha, dev = self._kfold_alpha(list(x[tr]), y[tr], params.kfold, 1111)
            devs.append(dev)
            accs.append(_accuracy(_pipeline(self.ngram_max, alpha).fit(list(x[tr]), y[tr]), list(x[te]), y[te]))
        return {"devacc": round(float(np.mean(devs)), 2), "acc": round(float(np.mean(accs)), 2), "ndev": len(y),
                "ntest": len(y)}

    def describe(self) -> dict:
        name = "NB-uni-tfidf" if self.ngram_max == 1 else "NB-bi-tfidf"
        return {"name": name, "recipe": f"tf-idf of lowercased words{' and bigrams' if self.ngram_max == 2 else ''} "
                f"-> multinomial Naive Bayes, alpha in {list(self.alphas)} chosen on dev (k-fold without dev)",
                "source": "baseline (Conneau et al. 2018, Table 2)", "trained": False}
