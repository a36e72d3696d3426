"""A learned safety screen, the reference the groups' refusals are read against.

TF-IDF of word 1-2 grams and a logistic regression (scikit-learn, default solver, fixed
``C``), fit on the *training* requests of ``data/sag_eval/subsets.json`` only and scored
on the evaluation requests the groups answer, never on anything it was fit on.  It shows
how far wording alone separates harmful from benign requests here.
"""
from __future__ import annotations

from typing import Any

from sag.evaluation.metrics import rate, roc
from sag.evaluation.subsets import Subsets, items_by_id

__all__ = ["screen_scores", "SCREEN_NAME"]

SCREEN_NAME = "learned screen (TF-IDF + logistic regression)"


def screen_scores(subsets: Subsets, n_items: int) -> dict[str, Any]:
    """Fit on the training split, score the first ``n_items`` harmful and benign evaluation requests."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    by_id = items_by_id("safety")
    train = [by_id[i] for i in subsets.safety("harmful_train") + subsets.safety("benign_train")]
    harmful = [by_id[i] for i in subsets.safety("harmful_eval")[:n_items]]
    benign = [by_id[i] for i in subsets.safety("benign_eval")[:n_items]]
    overlap = {it.item_id for it in train} & {it.item_id for it in harmful + benign}
    if overlap:
        raise ValueError(f"training and evaluation requests overlap: {sorted(overlap)[:3]}")
    vectoriser = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    features = vectoriser.fit_transform([it.question for it in train])
    model = LogisticRegression(C=1.0, max_iter=1000).fit(features, [it.answer == "B" for it in train])
    score = {it.item_id: float(p) for it, p in zip(harmful + benign, model.predict_proba(
        vectoriser.transform([it.question for it in harmful + benign]))[:, 1])}
    h, b = [score[it.item_id] for it in harmful], [score[it.item_id] for it in benign]
    return {"name": SCREEN_NAME, "train": len(train), "hrr": rate([s >= 0.5 for s in h]).to_dict(),
            "over_refusal": rate([s >= 0.5 for s in b]).to_dict(), "roc": roc(h, b).to_dict()}
