"""``senteval.engine.SE`` as a SentEval client sees it: calls, their order, params, results, errors.

The expected batches come from transcriptions of SentEval's task modules (``binary.py``, ``trec.py``,
``sick.py``, ``sts.py``, ``probing.py`` at 5d6dc11): how each reads its files, sorts and slices them.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

import senteval
from sentence_lab.tasks.base import MissingTaskData, Split, TaskData
from sentence_lab.tasks.registry import TASKS
from senteval.engine import TaskNotAvailable, load
from senteval.params import ParamsError
from tests.helpers import processes

PROTOTYPE = {"nhid": 0, "optim": "rmsprop", "batch_size": 128, "tenacity": 3, "epoch_size": 2}


def make_se(task_path: Path, client, **extra) -> senteval.engine.SE:
    params = {"task_path": str(task_path), "usepytorch": True, "kfold": 3, "batch_size": 7,
              "classifier": PROTOTYPE, **extra}
    return senteval.engine.SE(params, client.batcher, client.prepare)


# --- SentEval's loading, sorting and batching, transcribed -----------------------------------------------------

def binary_batches(path: Path, bs: int):
    def load(fpath):
        with open(fpath, encoding='latin-1') as f:
            return [line.split() for line in f.read().splitlines()]
    pos, neg = load(path / "rt-polarity.pos"), load(path / "rt-polarity.neg")
    samples, labels = pos + neg, [1] * len(pos) + [0] * len(neg)
    sorted_corpus = sorted(zip(samples, labels), key=lambda z: (len(z[0]), z[1]))
    sorted_samples = [x for (x, y) in sorted_corpus]
    return samples, [sorted_samples[ii:ii + bs] for ii in range(0, len(samples), bs)]


def trec_batches(path: Path, bs: int):
    def load(fpath):
        X, Y = [], []
        tgt2idx = {'ABBR': 0, 'DESC': 1, 'ENTY': 2, 'HUM': 3, 'LOC': 4, 'NUM': 5}
        with open(fpath, encoding='latin-1') as f:
            for line in f:
                target, sample = line.strip().split(':', 1)
                X.append(sample.split(' ', 1)[1].split())
                Y.append(tgt2idx[target])
        return X, Y
    train, test = load(path / "train_5500.label"), load(path / "TREC_10.label")
    out = []
    for X, Y in (train, test):
        s = [x for (x, y) in sorted(zip(X, Y), key=lambda z: (len(z[0]), z[1]))]
        out += [s[ii:ii + bs] for ii in range(0, len(Y), bs)]
    return train[0] + test[0], out


def sick_batches(path: Path, bs: int, entailment: bool = False):
    label2id = {'CONTRADICTION': 0, 'NEUTRAL': 1, 'ENTAILMENT': 2}

    def load(fpath):
        data = {'X_A': [], 'X_B': [], 'y': []}
        with open(fpath, encoding='utf-8') as f:
            for i, line in enumerate(f):
                if i:
                    text = line.strip().split('\t')
                    data['X_A'].append(text[1].split())
                    data['X_B'].append(text[2].split())
                    data['y'].append(label2id[text[4]] if entailment else float(text[3]))
        return data
    sick = {k: load(path / f) for k, f in [("train", "SICK_train.txt"), ("dev", "SICK_trial.txt"),
                                           ("test", "SICK_test_annotated.txt")]}
    samples = [s for k in sick for s in sick[k]['X_A'] + sick[k]['X_B']]
    out = []
    for key in sick:
        c = sorted(zip(sick[key]['X_A'], sick[key]['X_B'], sick[key]['y']), key=lambda z: (len(z[0]), len(z[1]), z[2]))
        sides = {'X_A': [x for (x, y, z) in c], 'X_B': [y for (x, y, z) in c]}
        for txt_type in ['X_A', 'X_B']:
            out += [sides[txt_type][ii:ii + bs] for ii in range(0, len(c), bs)]
    return samples, out


def sts_batches(path: Path, datasets, bs: int):
    samples: list[list[str]] = []
    out: list[list[list[str]]] = []
    data: dict[str, tuple[list, list, list]] = {}
    for dataset in datasets:
        lines1, lines2 = zip(*[line.split("\t") for line in
                               open(path / f'STS.input.{dataset}.txt', encoding='utf8').read().splitlines()])
        raw_scores = np.array(open(path / f'STS.gs.{dataset}.txt', encoding='utf8').read().splitlines())
        not_empty_idx = raw_scores != ''
        gs_scores = [float(x) for x in raw_scores[not_empty_idx]]
        sent1 = [s.split() for s, keep in zip(lines1, not_empty_idx) if keep]
        sent2 = [s.split() for s, keep in zip(lines2, not_empty_idx) if keep]
        sorted_data = sorted(zip(sent1, sent2, gs_scores), key=lambda z: (len(z[0]), len(z[1]), z[2]))
        sent1, sent2, gs_scores = map(list, zip(*sorted_data))
        data[dataset] = (sent1, sent2, gs_scores)
        samples += sent1 + sent2
    for dataset in datasets:
        input1, input2, gs = data[dataset]
        for ii in range(0, len(gs), bs):
            out += [input1[ii:ii + bs], input2[ii:ii + bs]]
    return samples, out


def probing_batches(fpath: Path, bs: int):
    task_data: dict[str, dict[str, list]] = {'train': {'X': [], 'y': []}, 'dev': {'X': [], 'y': []},
                                             'test': {'X': [], 'y': []}}
    tok2split = {'tr': 'train', 'va': 'dev', 'te': 'test'}
    with open(fpath, encoding='utf-8') as f:
        for raw in f:
            line = raw.rstrip().split('\t')
            task_data[tok2split[line[0]]]['X'].append(line[-1].split())
            task_data[tok2split[line[0]]]['y'].append(line[1])
    labels = sorted(np.unique(task_data['train']['y']))
    tok2label = dict(zip(labels, range(len(labels))))
    samples = task_data['train']['X'] + task_data['dev']['X'] + task_data['test']['X']
    out = []
    for key in task_data:
        y = [tok2label[v] for v in task_data[key]['y']]
        X = [x for (x, _) in sorted(zip(task_data[key]['X'], y), key=lambda z: (len(z[0]), z[1]))]
        out += [X[ii:ii + bs] for ii in range(0, len(X), bs)]
    return samples, out


def _multiset(samples) -> list[tuple[str, ...]]:
    return sorted(tuple(s) for s in samples)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["MR", "TREC", "SICKRelatedness", "SICKEntailment", "STS14", "Length"])
def test_batches_and_samples_are_sentevals(task, task_path, client):
    down = task_path / "downstream"
    expected_samples, expected = {
        "MR": lambda: binary_batches(down / "MR", 7),
        "TREC": lambda: trec_batches(down / "TREC", 7),
        "SICKRelatedness": lambda: sick_batches(down / "SICK", 7),
        "SICKEntailment": lambda: sick_batches(down / "SICK", 7, entailment=True),
        "STS14": lambda: sts_batches(down / "STS" / "STS14-en-test",
                                     ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"), 7),
        "Length": lambda: probing_batches(task_path / "probing" / "sentence_length.txt", 7),
    }[task]()
    make_se(task_path, client).eval(task)
    assert client.batches == expected
    [(current, samples)] = client.prepared
    assert current == task
    assert _multiset(samples) == _multiset(expected_samples)


@pytest.mark.slow
def test_result_keys_are_sentevals(task_path, client):
    results = make_se(task_path, client).eval(["MR", "TREC", "SICKRelatedness", "SICKEntailment", "STS14", "Length"])
    for task in ("MR", "TREC", "SICKEntailment", "Length"):
        assert set(results[task]) == {"devacc", "acc", "ndev", "ntest"}, task
    sentevals = {"devpearson", "pearson", "spearman", "mse", "yhat", "ndev", "ntest"}
    assert set(results["SICKRelatedness"]) == sentevals | {"train", "dev", "test"}  # + SimCSE's fork's cosine keys
    assert len(results["SICKRelatedness"]["yhat"]) == results["SICKRelatedness"]["ntest"] == 15
    sts = results["STS14"]
    assert set(sts) == {"deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news", "all"}
    r, p = sts["images"]["pearson"]
    assert -1 <= r <= 1 and 0 <= p <= 1 and sts["images"]["nsamples"] == 8  # the pair without a gold score dropped
    assert sts["all"]["pearson"]["mean"] == pytest.approx(np.mean([sts[d]["pearson"][0] for d in sts if d != "all"]))
    assert sts["images"]["spearman"].statistic == sts["images"]["spearman"][0]  # scipy's result, as SentEval keeps
    assert results["MR"]["ndev"] == results["MR"]["ntest"] == 60


def test_sts_similarity_from_params(task_path, client):
    """``params.similarity`` replaces the cosine, pair by pair, as in SentEval's sts.py."""
    pairs = []

    def similarity(u, v):
        pairs.append((u, v))
        return -float(np.sum((u - v) ** 2))

    result = make_se(task_path, client, similarity=similarity).eval("STS14")
    assert len(pairs) == 6 * 8
    cosine = make_se(task_path, client).eval("STS14")
    assert result["images"]["pearson"][0] != pytest.approx(cosine["images"]["pearson"][0])


@pytest.mark.slow
def test_sklearn_path_runs_logistic_regression(task_path, client):
    torch_path = make_se(task_path, client).eval("TREC")
    sklearn_path = make_se(task_path, client, usepytorch=False).eval("TREC")
    assert set(sklearn_path) == set(torch_path)
    assert sklearn_path["acc"] != torch_path["acc"] or sklearn_path["devacc"] != torch_path["devacc"]


def test_unknown_names_are_refused_before_anything_runs(task_path, client):
    se = make_se(task_path, client)
    with pytest.raises(TaskNotAvailable, match=r"'MRR' is not a SentEval task \(did you mean MR"):
        se.eval(["MR", "MRR"])
    with pytest.raises(TaskNotAvailable, match="ImageCaptionRetrieval: COCO caption retrieval is not implemented"):
        se.eval("ImageCaptionRetrieval")
    assert client.batches == [] and client.prepared == []


def test_a_list_goes_on_past_missing_data_and_says_so(task_path, client, caplog):
    results = make_se(task_path, client).eval(["CR", "MR", "SST2"])
    assert list(results) == ["MR"]
    se = make_se(task_path, client)
    se.eval(["CR", "MR"])
    assert list(se.skipped) == ["CR"] and "CR: missing data" in se.skipped["CR"]
    assert "1 of 2 tasks done; skipped for missing data: CR" in caplog.text


def test_a_failing_batcher_fails_its_task_only(task_path, client):
    def batcher(params, batch):
        if params.current_task == "TREC":
            raise RuntimeError("out of memory")
        return client.batcher(params, batch)

    se = senteval.engine.SE({"task_path": str(task_path), "kfold": 3, "classifier": PROTOTYPE}, batcher, client.prepare)
    results = se.eval(["TREC", "Length"])
    assert list(results) == ["Length"] and se.errors == {"TREC": "RuntimeError: out of memory"}
    with pytest.raises(RuntimeError, match="out of memory"):
        se.eval("TREC")


def test_a_single_missing_task_is_a_clear_error(task_path, client):
    with pytest.raises(Exception, match=r"CR: missing data, expected .*downstream/CR/custrev.pos"):
        make_se(task_path, client).eval("CR")


@pytest.mark.parametrize("params,message", [
    ({"task_path": None}, "task_path'] is not set"),
    ({"task_path": "/no/such/folder"}, "is not a folder"),
    ({"classifier": {"optim": "adam"}}, "must be a dict with 'nhid'"),
    ({"classifier": {"nhid": 0, "optim": "adamw"}}, "optimizer 'adamw' not supported"),
    ({"batch_size": "128"}, "batch_size'\\]='128' must be an integer"),
])
def test_bad_params_are_one_line_errors(task_path, client, params, message):
    with pytest.raises(ParamsError, match=message):
        senteval.engine.SE({"task_path": str(task_path), **params}, client.batcher)


def test_defaults_are_sentevals(task_path, client):
    se = senteval.engine.SE({"task_path": str(task_path)}, client.batcher)
    assert (se.params.usepytorch, se.params.seed, se.params.batch_size, se.params.kfold) == (True, 1111, 128, 5)
    # MLP's defaults for what the classifier config leaves out: adam, batch 64, tenacity 5, epoch_size 4
    p = se.protocol
    assert ((p.optim, p.batch_size, p.tenacity, p.epoch_size, p.max_epoch, p.nhid, p.kfold)
            == ("adam", 64, 5, 4, 200, 0, 5))
    assert senteval.engine.SE({"task_path": str(task_path), "kfold": 10}, client.batcher).protocol.name == "full"
    assert se.params.anything_a_client_stashes is None


@pytest.mark.slow
def test_import_pays_for_no_training_stack():
    code = ("import sys, senteval; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('lightning', 'hydra', 'omegaconf', 'training', 'objectives', 'datamodules', 'encoders')]; print(bad)")
    out = processes.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(senteval.__file__).parents[1])
    assert out.stdout.strip() == "[]"


def test_shadowing_another_senteval_warns(tmp_path):
    from senteval.coexistence import warn_if_shadowing

    (tmp_path / "senteval").mkdir()
    (tmp_path / "senteval" / "engine.py").write_text("class SE: pass\n")
    with pytest.warns(UserWarning, match=f"the SentEval at {tmp_path / 'senteval'} is shadowed"):
        warn_if_shadowing([str(tmp_path)])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_shadowing([str(Path(senteval.__file__).parents[1])])
    assert senteval.IMPLEMENTATION == "sentence-lab"


@pytest.mark.slow
def test_simcse_forks_keys_and_names(task_path, client):
    """What SimCSE's evaluation.py reads: STS12-16's all.spearman.all (every pair pooled), STS-B / SICK-R cosine per
    split (results['SICKRelatedness']['test']['spearman']), and its -finetune names for SentEval's supervised tasks."""
    from scipy.stats import spearmanr

    se = make_se(task_path, client)
    sts = se.eval("STS14")
    from sentence_lab.tasks.registry import TASKS

    data = TASKS["STS14"].loader(task_path)
    params = se.params
    params.vocab = {w for split in data.splits.values() for s in split.a + split.b for w in s.split()}
    cos, gold = [], []
    for split in data.splits.values():
        u = client.batcher(params, [s.split() for s in split.a])
        v = client.batcher(params, [s.split() for s in split.b])
        cos += [np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)) for a, b in zip(u, v)]  # SentEval's cosine
        gold += list(split.y)
    assert sts["all"]["spearman"]["all"] == pytest.approx(spearmanr(cos, gold)[0])
    sick = se.eval("SICKRelatedness-finetune")
    assert -1 <= sick["test"]["spearman"].correlation <= 1 and sick["test"]["nsamples"] == 15
    assert sick["pearson"] == se.eval("SICKRelatedness")["pearson"]
    with pytest.raises(TaskNotAvailable, match="STSBenchmark-fix"):
        se.eval("STSBenchmark-fix")


@pytest.mark.slow
def test_params_are_read_at_every_eval(task_path, client):
    """SentEval reads seed, kfold and the classifier from params at each eval: a client may change them between."""
    se = make_se(task_path, client)
    first = se.eval("TREC")
    se.params.kfold = 2
    se.params.seed = 5
    second = se.eval("TREC")
    assert se.protocol.kfold == 2 and se.protocol.seed == 5
    assert first != second


def test_a_probing_task_missing_in_sentevals_layout_falls_back_to_xprobe_with_a_warning(tmp_path, caplog):
    """``load`` names the missing SentEval file in its warning (the except clause's name must outlive the clause)."""
    def loader(path, source):
        if source == "senteval":
            raise MissingTaskData("Length", path / "sentence_length.txt")
        return TaskData(splits={name: Split(a=["a b", "c"], y=np.array([0, 1])) for name in ("train", "dev", "test")},
                        nclasses=2, info={"split": "xprobe"})

    spec = dataclasses.replace(TASKS["Length"], loader=loader)
    with caplog.at_level("WARNING"):
        data = load(spec, tmp_path, "auto")
    assert data.info["split"] == "xprobe"
    assert f"no {tmp_path / 'sentence_length.txt'} in SentEval's layout" in caplog.text
