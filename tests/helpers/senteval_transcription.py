"""SentEval's probes as its code writes them, the reference the engine is checked against.

A literal transcription of ``senteval/tools/classifier.py`` (``PyTorchClassifier`` + ``MLP``) and
``senteval/tools/relatedness.py`` (``RelatednessPytorch``) at facebookresearch/SentEval 5d6dc11, kept to
the same statements in the same order. Changed only where a CPU-only modern torch requires it: no
``.cuda()``, ``torch.FloatTensor(devX)`` for numpy input only, the optimiser built by ``get_optimizer``'s
rules from our parsed spec, and the model's dtype as a parameter (float64 makes rounding ~1e-16, so a
comparison can be tight).
"""
from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from sentence_lab.evaluation.protocol import parse_optim


def get_optimizer(spec: str, parameters):
    """``utils.get_optimizer`` then ``optim_fn(params, **optim_params)`` (torch's defaults elsewhere)."""
    method, hp = parse_optim(spec)
    b = lambda: (hp["beta1"], hp["beta2"])  # noqa: E731
    make = {
        "adam": lambda: torch.optim.Adam(parameters, lr=hp["lr"], betas=b(), eps=hp["eps"]),
        "adamax": lambda: torch.optim.Adamax(parameters, lr=hp["lr"], betas=b(), eps=hp["eps"]),
        "rmsprop": lambda: torch.optim.RMSprop(parameters, lr=hp["lr"], alpha=hp["alpha"], eps=hp["eps"],
                                               momentum=hp["momentum"], centered=bool(hp["centered"])),
        "sgd": lambda: torch.optim.SGD(parameters, lr=hp["lr"], momentum=hp["momentum"],
                                       dampening=hp["dampening"], nesterov=bool(hp["nesterov"])),
        "adagrad": lambda: torch.optim.Adagrad(parameters, lr=hp["lr"], lr_decay=hp["lr_decay"], eps=hp["eps"],
                                               initial_accumulator_value=hp["initial_accumulator_value"]),
        "adadelta": lambda: torch.optim.Adadelta(parameters, lr=hp["lr"], rho=hp["rho"], eps=hp["eps"]),
    }
    return make[method]()


class PyTorchClassifier:
    def __init__(self, inputdim, nclasses, l2reg=0., batch_size=64, seed=1111, dtype=torch.float32):
        # fix seed
        np.random.seed(seed)
        torch.manual_seed(seed)
        self.inputdim = inputdim
        self.nclasses = nclasses
        self.l2reg = l2reg
        self.batch_size = batch_size
        self.dtype = dtype

    def prepare_split(self, X, y, validation_data=None, validation_split=None):
        assert validation_split or validation_data
        if validation_data is not None:
            trainX, trainy = X, y
            devX, devy = validation_data
        else:
            permutation = np.random.permutation(len(X))
            trainidx = permutation[int(validation_split * len(X)):]
            devidx = permutation[0:int(validation_split * len(X))]
            trainX, trainy = X[trainidx], y[trainidx]
            devX, devy = X[devidx], y[devidx]
        trainX = torch.from_numpy(trainX).to(dtype=self.dtype)
        trainy = torch.from_numpy(trainy).to(dtype=torch.int64)
        devX = torch.from_numpy(devX).to(dtype=self.dtype)
        devy = torch.from_numpy(devy).to(dtype=torch.int64)
        return trainX, trainy, devX, devy

    def fit(self, X, y, validation_data=None, validation_split=None, early_stop=True):
        self.nepoch = 0
        bestaccuracy = -1
        stop_train = False
        early_stop_count = 0
        trainX, trainy, devX, devy = self.prepare_split(X, y, validation_data, validation_split)
        while not stop_train and self.nepoch <= self.max_epoch:
            self.trainepoch(trainX, trainy, epoch_size=self.epoch_size)
            accuracy = self.score(devX, devy)
            if accuracy > bestaccuracy:
                bestaccuracy = accuracy
                bestmodel = copy.deepcopy(self.model)
            elif early_stop:
                if early_stop_count >= self.tenacity:
                    stop_train = True
                early_stop_count += 1
        self.model = bestmodel
        return bestaccuracy

    def trainepoch(self, X, y, epoch_size=1):
        self.model.train()
        for _ in range(self.nepoch, self.nepoch + epoch_size):
            permutation = np.random.permutation(len(X))
            for i in range(0, len(X), self.batch_size):
                idx = torch.from_numpy(permutation[i:i + self.batch_size]).long()
                Xbatch = X[idx]
                ybatch = y[idx]
                output = self.model(Xbatch)
                loss = self.loss_fn(output, ybatch)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
        self.nepoch += epoch_size

    def score(self, devX, devy):
        self.model.eval()
        correct = 0
        if isinstance(devX, np.ndarray):
            devX = torch.from_numpy(devX).to(self.dtype)
            devy = torch.LongTensor(devy)
        with torch.no_grad():
            for i in range(0, len(devX), self.batch_size):
                Xbatch = devX[i:i + self.batch_size]
                ybatch = devy[i:i + self.batch_size]
                output = self.model(Xbatch)
                pred = output.data.max(1)[1]
                correct += pred.long().eq(ybatch.data.long()).sum().item()
            accuracy = 1.0 * correct / len(devX)
        return accuracy

    def predict(self, devX):
        self.model.eval()
        if isinstance(devX, np.ndarray):
            devX = torch.from_numpy(devX).to(self.dtype)
        yhat = np.array([])
        with torch.no_grad():
            for i in range(0, len(devX), self.batch_size):
                Xbatch = devX[i:i + self.batch_size]
                output = self.model(Xbatch)
                yhat = np.append(yhat, output.data.max(1)[1].cpu().numpy())
        yhat = np.vstack(yhat)
        return yhat


class MLP(PyTorchClassifier):
    def __init__(self, params, inputdim, nclasses, l2reg=0., batch_size=64, seed=1111, dtype=torch.float32):
        super().__init__(inputdim, nclasses, l2reg, batch_size, seed, dtype)
        self.nhid = 0 if "nhid" not in params else params["nhid"]
        self.optim = "adam" if "optim" not in params else params["optim"]
        self.tenacity = 5 if "tenacity" not in params else params["tenacity"]
        self.epoch_size = 4 if "epoch_size" not in params else params["epoch_size"]
        self.max_epoch = 200 if "max_epoch" not in params else params["max_epoch"]
        self.dropout = 0. if "dropout" not in params else params["dropout"]
        self.batch_size = 64 if "batch_size" not in params else params["batch_size"]
        if params["nhid"] == 0:
            self.model = nn.Sequential(nn.Linear(self.inputdim, self.nclasses))
        else:
            self.model = nn.Sequential(
                nn.Linear(self.inputdim, params["nhid"]),
                nn.Dropout(p=self.dropout),
                nn.Sigmoid(),
                nn.Linear(params["nhid"], self.nclasses),
            )
        self.model = self.model.to(dtype)
        self.loss_fn = nn.CrossEntropyLoss()
        self.loss_fn.size_average = False  # ignored by torch >= 0.4.1: the loss is a mean
        self.optimizer = get_optimizer(self.optim, self.model.parameters())
        self.optimizer.param_groups[0]['weight_decay'] = self.l2reg


class RelatednessPytorch:
    def __init__(self, train, valid, test, devscores, config, dtype=torch.float32):
        np.random.seed(config['seed'])
        torch.manual_seed(config['seed'])
        self.train = train
        self.valid = valid
        self.test = test
        self.devscores = devscores
        self.inputdim = train['X'].shape[1]
        self.nclasses = config['nclasses']
        self.seed = config['seed']
        self.l2reg = 0.
        self.batch_size = 64
        self.maxepoch = 1000
        self.early_stop = True
        self.model = nn.Sequential(nn.Linear(self.inputdim, self.nclasses), nn.Softmax(dim=-1)).to(dtype)
        self.loss_fn = nn.MSELoss()
        self.optimizer = torch.optim.Adam(self.model.parameters(), weight_decay=self.l2reg)
        self.dtype = dtype

    def run(self):
        from scipy.stats import pearsonr

        self.nepoch = 0
        bestpr = -1
        early_stop_count = 0
        r = np.arange(1, 6)
        stop_train = False
        trainX = torch.from_numpy(self.train['X']).to(self.dtype)
        trainy = torch.from_numpy(self.train['y']).to(self.dtype)
        devX = torch.from_numpy(self.valid['X']).to(self.dtype)
        testX = torch.from_numpy(self.test['X']).to(self.dtype)
        while not stop_train and self.nepoch <= self.maxepoch:
            self.trainepoch(trainX, trainy, nepoches=50)
            yhat = np.dot(self.predict_proba(devX), r)
            pr = pearsonr(yhat, self.devscores)[0]
            pr = 0 if pr != pr else pr  # if NaN bc std=0
            if pr > bestpr:
                bestpr = pr
                bestmodel = copy.deepcopy(self.model)
            elif self.early_stop:
                if early_stop_count >= 3:
                    stop_train = True
                early_stop_count += 1
        self.model = bestmodel
        yhat = np.dot(self.predict_proba(testX), r)
        return bestpr, yhat

    def trainepoch(self, X, y, nepoches=1):
        self.model.train()
        for _ in range(self.nepoch, self.nepoch + nepoches):
            permutation = np.random.permutation(len(X))
            for i in range(0, len(X), self.batch_size):
                idx = torch.from_numpy(permutation[i:i + self.batch_size]).long()
                Xbatch = X[idx]
                ybatch = y[idx]
                output = self.model(Xbatch)
                loss = self.loss_fn(output, ybatch)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
        self.nepoch += nepoches

    def predict_proba(self, devX):
        self.model.eval()
        probas = []
        with torch.no_grad():
            for i in range(0, len(devX), self.batch_size):
                Xbatch = devX[i:i + self.batch_size]
                if len(probas) == 0:
                    probas = self.model(Xbatch).data.cpu().numpy()
                else:
                    probas = np.concatenate((probas, self.model(Xbatch).data.cpu().numpy()), axis=0)
        return probas


def train_member(X, y, group, l2reg, params, nclasses, Xdev=None, ydev=None, dtype=torch.float32) -> MLP:
    """One member of the engine's grid, trained by the transcription: ``MLP(...).fit`` on the group's data."""
    config = {"nhid": params.nhid, "optim": params.optim, "tenacity": params.tenacity, "epoch_size": params.epoch_size,
              "max_epoch": params.max_epoch, "dropout": params.dropout, "batch_size": params.batch_size}
    clf = MLP(config, X.shape[1], nclasses, l2reg=l2reg, batch_size=params.batch_size, seed=params.seed, dtype=dtype)
    tr = np.asarray(group.train_idx)
    if group.dev_idx is None:
        clf.fit(X[tr], y[tr], validation_split=group.validation_split)
    else:
        Xd, yd = (X, y) if Xdev is None else (Xdev, ydev)
        clf.fit(X[tr], y[tr], validation_data=(Xd[group.dev_idx], yd[group.dev_idx]))
    return clf
