"""The classifier engine of the SentEval protocol: every probe of a task stage trained as one stacked model.

SentEval (``senteval/tools/classifier.py``, ``relatedness.py``) trains its probes one after another. The
probes of a stage (each fold x each L2 value) are independent and start from the same seed, so here they
train together. Members sit on a grid ``[G, L]``: a *group* is a training set with its dev set, shared by
``L`` members that differ only in their L2 value. Four pieces, each written once:

* :class:`BatchPlan` (``batch_plan.py``) -- SentEval's numpy streams: the 5% validation split, then one
  permutation per epoch, one ``RandomState(seed)`` per (training-set size, split), since SentEval reseeds numpy in
  every classifier. Per step it gives the rows of every live group, each row's loss weight (``1 / rows`` of the
  group's minibatch; padding weighs 0) and which groups step (a group whose epoch is over does not).
* :class:`StackedProbe` (``stacked_probe.py``) -- one tensor per layer for all members, ``[G, L, out, in + 1]``:
  ``nn.Linear``'s ``[out, in]`` with the bias as the last column. Gradients are written by hand for SentEval's two
  losses: cross-entropy (classifiers) and MSE on the softmax (relatedness); no autograd runs.
* :class:`MaskedOptimizer` (``masked_optimizer.py``) -- torch's single-tensor update of adam, adamax, rmsprop, sgd,
  adagrad and adadelta (``torch/optim/*.py``) with a per-member weight decay and per-group step counts.
* :class:`EarlyStopping` (``early_stopping.py``) -- SentEval's rule, per member.

:func:`fit_members` (``fitting.py``) trains a stage's members with them.

Members never mix: every row of the products, every softmax and every optimiser element is one member's. MLP
members of different hidden widths (the probing paper's grid) train as one stack per width. A member that stopped
keeps its best weights (a copy); a group leaves the model when all its members stopped, and a member when it
stopped in every group (until then it steps with its group, unused). Results equal SentEval's one-by-one training
up to float rounding (summation order inside the products): ``tests/helpers/senteval_transcription.py`` is the
reference. Dropout > 0 draws its masks from its own
generator, so with dropout the two agree in distribution only.

Speed: on the CPU a linear probe without dropout steps through :mod:`.probe_kernels` (one
compiled pass per step reads each row once, straight from the feature matrix); otherwise (MLP, dropout, wide outputs,
a GPU) the features get a column of ones once per fit, the rows and weighted targets of an epoch's steps are
gathered at once (``GATHER_BUDGET``), and a step dispatches only torch's products ``W @ Xb^T`` and ``dZ @ Xb``, the
softmax, the loss's gradient and the update: 10 kernels a step for a linear probe under RMSprop, 6 under Adam
(torch's fused kernel, when all groups share a step count), 9 for the relatedness regression
(``benchmarks/lib/dispatch_counts.py``, ``benchmarks/suite_dispatch.py``). On a GPU an epoch whose groups
all step at every step is recorded once as a CUDA graph and replayed (:mod:`.step_graphs`).
What the engine reads and computes is counted in ``FitResult.work`` (``benchmarks/eval_speed.py --high-dim``).
"""
from __future__ import annotations

from sentence_lab.evaluation.classifier.batch_plan import BatchPlan, EpochSteps, Group, Step
from sentence_lab.evaluation.classifier.early_stopping import EarlyStopping
from sentence_lab.evaluation.classifier.fitting import FitResult, count_correct, features_stay_on_host, fit_members
from sentence_lab.evaluation.classifier.masked_optimizer import MaskedOptimizer
from sentence_lab.evaluation.classifier.stacked_probe import StackedProbe

__all__ = ["Group", "FitResult", "BatchPlan", "StackedProbe", "MaskedOptimizer", "EarlyStopping", "fit_members",
           "count_correct", "features_stay_on_host", "Step", "EpochSteps"]
