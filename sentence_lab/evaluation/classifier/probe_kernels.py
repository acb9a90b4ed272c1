"""Fused CPU kernels for the linear probe: every minibatch row is read from memory once per step.

The torch path of :class:`sentence_lab.evaluation.classifier.StackedProbe`
gathers a step's rows into a buffer, multiplies
them with the weights (forward) and multiplies them again with the loss's gradient (backward): three passes
over rows that, for a 4096-d encoder, are far larger than the caches. A linear probe's products are skinny
(``L2 values x classes`` columns per group), so BLAS runs them well below this CPU's peak and the step is bound
by reading rows. Here one compiled loop (numba) takes four rows of a group straight from the feature matrix,
computes their logits, the softmax and the loss's gradient, and adds their outer products into the group's
gradient while the rows are still in the core's cache. Loops are register-blocked (4 rows x 2 or 6 columns) and
vectorised by LLVM; groups (or, when there are fewer groups than threads, parts of a group's rows) run on
separate threads. Two-class probes with cross-entropy compute one column per member (``z1 - z0``), half the
products. A step then costs about the time to read its rows plus the time of its arithmetic: within a core
the two hardly overlap (``benchmarks/eval_speed.py --high-dim`` reports both rates).

The maths is the torch path's: ``tests/evaluation/classifier/test_probe_kernels.py`` checks the kernels against
autograd, and the SentEval-transcription tests run both paths. Only the summation order inside the dot products differs
(LLVM may reassociate and fuse multiply-adds, nothing else), so results agree to float rounding. Used on the CPU for
linear probes without dropout whose weights of a group fit in the core's cache (:func:`usable`); the torch path
stays for MLPs, dropout, GPUs and wide outputs (WordContent's 1000 classes: compute-bound, BLAS's job).
"""
from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
import torch
from filelock import FileLock
from numba import njit, prange

__all__ = ["MAX_GROUP_BYTES", "usable", "training_columns", "sync_threads", "linear_gradients", "linear_logits"]

MAX_GROUP_BYTES = 1 << 19  # one group's weights [M, d + 1] kept in the core's L2 cache (half of 1 MiB)
SPLIT_WORK = 1 << 18  # multiply-adds of a group's step above which its rows are split between threads
# vectorised sums, FMA
_JIT: dict[str, Any] = dict(fastmath={"reassoc", "contract"}, boundscheck=False, cache=True, nogil=True)
# Compiling the kernels of a float type takes about 30 s of a core, once per machine (numba's cache beside this file).
# Processes that start together on a machine without that cache (DDP ranks, a sweep's jobs, pytest's workers) would each
# compile: the first call of a kernel for a float type takes this machine-wide lock, so one process compiles and writes
# the cache while the others wait, then load it.
_HERE = hashlib.sha1(__file__.encode()).hexdigest()[:12]  # one lock for each copy of the code (and its cache)
COMPILE_LOCK = Path(tempfile.gettempdir()) / f"sentence_lab-kernels-{_HERE}.lock"
_called: set[tuple[str, str]] = set()


def usable(device: torch.device, nhid: int, dropout: float, columns: int, width: int, itemsize: int) -> bool:
    """Whether the fused kernels apply: CPU, linear probe, no dropout, one group's weights within the budget."""
    return (device.type == "cpu" and nhid == 0 and dropout == 0 and columns * width * itemsize <= MAX_GROUP_BYTES)


def training_columns(members: int, nclasses: int, mse: bool) -> int:
    """Columns of a group's products in a training step: one per member for two classes with cross-entropy."""
    return members if nclasses == 2 and not mse else members * nclasses


@njit(**_JIT)
def _forward4(Wg, X, i0, i1, i2, i3, z, zero):
    """``z[r, m] = W[m] . [x_r | 1]`` for the four rows ``X[i0..i3]`` (bias: ``W``'s column past ``X``'s width)."""
    M, Kw = Wg.shape
    Kx = X.shape[1]
    x0, x1, x2, x3 = X[i0], X[i1], X[i2], X[i3]
    b = Kw > Kx
    for m in range(0, M - 1, 2):
        w0, w1 = Wg[m], Wg[m + 1]
        a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = zero
        for k in range(Kx):
            u, v = w0[k], w1[k]
            p, q, s, t = x0[k], x1[k], x2[k], x3[k]
            a00 += u * p
            a01 += v * p
            a10 += u * q
            a11 += v * q
            a20 += u * s
            a21 += v * s
            a30 += u * t
            a31 += v * t
        b0 = w0[Kx] if b else zero
        b1 = w1[Kx] if b else zero
        z[0, m], z[1, m], z[2, m], z[3, m] = a00 + b0, a10 + b0, a20 + b0, a30 + b0
        z[0, m + 1], z[1, m + 1], z[2, m + 1], z[3, m + 1] = a01 + b1, a11 + b1, a21 + b1, a31 + b1
    if M % 2:
        w0 = Wg[M - 1]
        a0 = a1 = a2 = a3 = zero
        for k in range(Kx):
            u = w0[k]
            a0 += u * x0[k]
            a1 += u * x1[k]
            a2 += u * x2[k]
            a3 += u * x3[k]
        b0 = w0[Kx] if b else zero
        z[0, M - 1], z[1, M - 1], z[2, M - 1], z[3, M - 1] = a0 + b0, a1 + b0, a2 + b0, a3 + b0


@njit(**_JIT)
def _forward4x6(Wg, X, i0, i1, i2, i3, z, zero):
    """:func:`_forward4` by blocks of up to six columns (4 x 6 accumulators): each pass over the four rows serves
    three times the columns of a pair. ``M`` is split into even blocks; a short block repeats its last column."""
    M, Kw = Wg.shape
    Kx = X.shape[1]
    x0, x1, x2, x3 = X[i0], X[i1], X[i2], X[i3]
    blocks = (M + 5) // 6
    width = (M + blocks - 1) // blocks
    for m0 in range(0, M, width):
        last = min(M, m0 + width) - 1
        w0, w1, w2 = Wg[m0], Wg[min(m0 + 1, last)], Wg[min(m0 + 2, last)]
        w3, w4, w5 = Wg[min(m0 + 3, last)], Wg[min(m0 + 4, last)], Wg[min(m0 + 5, last)]
        a00 = a01 = a02 = a03 = a04 = a05 = a10 = a11 = a12 = a13 = a14 = a15 = zero
        a20 = a21 = a22 = a23 = a24 = a25 = a30 = a31 = a32 = a33 = a34 = a35 = zero
        for k in range(Kx):
            p, q, s, t = x0[k], x1[k], x2[k], x3[k]
            u = w0[k]
            a00, a10, a20, a30 = a00 + u * p, a10 + u * q, a20 + u * s, a30 + u * t
            u = w1[k]
            a01, a11, a21, a31 = a01 + u * p, a11 + u * q, a21 + u * s, a31 + u * t
            u = w2[k]
            a02, a12, a22, a32 = a02 + u * p, a12 + u * q, a22 + u * s, a32 + u * t
            u = w3[k]
            a03, a13, a23, a33 = a03 + u * p, a13 + u * q, a23 + u * s, a33 + u * t
            u = w4[k]
            a04, a14, a24, a34 = a04 + u * p, a14 + u * q, a24 + u * s, a34 + u * t
            u = w5[k]
            a05, a15, a25, a35 = a05 + u * p, a15 + u * q, a25 + u * s, a35 + u * t
        sums = ((a00, a10, a20, a30), (a01, a11, a21, a31), (a02, a12, a22, a32), (a03, a13, a23, a33),
                (a04, a14, a24, a34), (a05, a15, a25, a35))
        for c in range(6):
            m = m0 + c
            if m <= last:
                b = Wg[m, Kx] if Kw > Kx else zero
                z[0, m], z[1, m], z[2, m], z[3, m] = sums[c][0] + b, sums[c][1] + b, sums[c][2] + b, sums[c][3] + b


@njit(**_JIT)
def _forward(Wg, X, i0, i1, i2, i3, z, zero):
    """Logits of four rows: six-column blocks from five columns on (fewer passes over the rows), else pairs."""
    if Wg.shape[0] >= 5:
        _forward4x6(Wg, X, i0, i1, i2, i3, z, zero)
    else:
        _forward4(Wg, X, i0, i1, i2, i3, z, zero)


@njit(**_JIT)
def _backward4(Gg, X, i0, i1, i2, i3, d):
    """``Gg[m] += sum_r d[r, m] [x_r | 1]`` for the four rows ``X[i0..i3]``."""
    M, Kw = Gg.shape
    Kx = X.shape[1]
    x0, x1, x2, x3 = X[i0], X[i1], X[i2], X[i3]
    m = 0
    while m < M:
        g0 = Gg[m]
        a0, a1, a2, a3 = d[0, m], d[1, m], d[2, m], d[3, m]
        if m + 1 < M:
            g1 = Gg[m + 1]
            b0, b1, b2, b3 = d[0, m + 1], d[1, m + 1], d[2, m + 1], d[3, m + 1]
            for k in range(Kx):
                p, q, s, t = x0[k], x1[k], x2[k], x3[k]
                g0[k] += a0 * p + a1 * q + a2 * s + a3 * t
                g1[k] += b0 * p + b1 * q + b2 * s + b3 * t
            if Kw > Kx:
                g1[Kx] += b0 + b1 + b2 + b3
        else:
            for k in range(Kx):
                g0[k] += a0 * x0[k] + a1 * x1[k] + a2 * x2[k] + a3 * x3[k]
        if Kw > Kx:
            g0[Kx] += a0 + a1 + a2 + a3
        m += 2


@njit(**_JIT)
def _loss_gradient4(z, T, idx, valid, C, wt, mse, D):
    """Logits ``z [4, M]`` -> gradient of the weighted loss w.r.t. them, in place; rows past ``valid`` get 0.

    Cross-entropy: ``(softmax - T) * wt``. ``mse`` (relatedness): ``d/dz`` of ``wt/2 * sum (softmax - T)^2``,
    i.e. ``(D - (P . D)) * P`` with ``D = (P - T) * wt``, as the torch path writes it.
    """
    M = z.shape[1]
    for r in range(4):
        if r >= valid:
            z[r, :] = 0
            continue
        t = T[idx[r]]
        for m0 in range(0, M, C):
            top = z[r, m0]
            for c in range(1, C):
                top = max(top, z[r, m0 + c])
            total = z[r, m0] - z[r, m0]
            for c in range(C):
                e = np.exp(z[r, m0 + c] - top)
                z[r, m0 + c] = e
                total += e
            for c in range(C):
                z[r, m0 + c] = z[r, m0 + c] / total
            if mse:
                dot = total - total
                for c in range(C):
                    D[c] = (z[r, m0 + c] - t[c]) * wt
                    dot += z[r, m0 + c] * D[c]
                for c in range(C):
                    z[r, m0 + c] = (D[c] - dot) * z[r, m0 + c]
            else:
                for c in range(C):
                    z[r, m0 + c] = (z[r, m0 + c] - t[c]) * wt


@njit(**_JIT)
def _binary_gradient4(z, T, idx, valid, wt):
    """Two classes, cross-entropy: ``z [4, L]`` holds each member's ``z1 - z0``; becomes ``(p0 - t0) * wt``, the
    gradient w.r.t. ``z0`` (the one w.r.t. ``z1`` is its negative)."""
    for r in range(4):
        if r >= valid:
            z[r, :] = 0
            continue
        t0 = T[idx[r], 0]
        one = t0 - t0 + 1  # 1 in the targets' float type (a literal 1 would make the softmax float64)
        for m in range(z.shape[1]):
            delta = z[r, m]
            if delta > 0:  # softmax's max-shift: the larger logit's exponential is 1
                e = np.exp(-delta)
                p0 = e / (e + one)
            else:
                p0 = one / (one + np.exp(delta))
            z[r, m] = (p0 - t0) * wt


@njit(**_JIT)
def _part_gradients(X, T, rows, count, wts, W, target, j, parts, mse):
    """Part ``j % parts`` of group ``j // parts``'s rows: its gradient into ``target[j]``. Two classes with
    cross-entropy use one column per member: ``z1 - z0 = (w1 - w0) . x`` gives the softmax, and the gradients
    of ``w0`` and ``w1`` are opposite, so the products have half the columns."""
    _, M, Kw = W.shape
    C = T.shape[1]
    binary = C == 2 and not mse
    Mc = M // 2 if binary else M  # columns computed
    zero = np.zeros(1, dtype=W.dtype)[0]  # a float of W's type (W[...] * 0 would be a float64)
    g, part = j // parts, j % parts
    n = count[g]
    share = ((n + 3) // 4 + parts - 1) // parts * 4  # rows per part, in whole blocks of four
    lo, hi = part * share, min(n, (part + 1) * share)
    if binary:
        Wj = np.empty((Mc, Kw), dtype=W.dtype)
        for m in range(Mc):
            Wj[m] = W[g, 2 * m + 1] - W[g, 2 * m]
        Gj = np.zeros((Mc, Kw), dtype=W.dtype)
    else:
        Wj, Gj = W[g], target[j]
        Gj[:] = 0
    z = np.empty((4, Mc), dtype=W.dtype)
    D = np.empty(C, dtype=W.dtype)
    idx = np.empty(4, dtype=np.int64)
    for r0 in range(lo, hi, 4):
        valid = min(4, hi - r0)
        for r in range(4):
            idx[r] = rows[g, r0 + r] if r < valid else rows[g, r0]
        _forward(Wj, X, idx[0], idx[1], idx[2], idx[3], z, zero)
        if binary:
            _binary_gradient4(z, T, idx, valid, wts[g])
        else:
            _loss_gradient4(z, T, idx, valid, C, wts[g], mse, D)
        _backward4(Gj, X, idx[0], idx[1], idx[2], idx[3], z)
    if binary:
        for m in range(Mc):
            target[j, 2 * m] = Gj[m]
            target[j, 2 * m + 1] = -Gj[m]


@njit(parallel=True, **_JIT)
def _gradients(X, T, rows, count, wts, W, grad, parts, mse):
    """Every group's gradient (each group in ``parts`` parts on separate threads, then summed)."""
    G, M, Kw = W.shape
    target = grad if parts == 1 else np.empty((G * parts, M, Kw), dtype=W.dtype)
    for j in prange(G * parts):
        _part_gradients(X, T, rows, count, wts, W, target, j, parts, mse)
    if parts > 1:
        for g in prange(G):
            grad[g] = target[g * parts]
            for part in range(1, parts):
                grad[g] += target[g * parts + part]


@njit(**_JIT)
def _block_logits(X, rows, count, W, out, j, blocks):
    """Logits of block ``j % blocks`` (four rows) of group ``j // blocks`` into ``out``."""
    M = W.shape[1]
    g, r0 = j // blocks, (j % blocks) * 4
    valid = min(4, count[g] - r0)
    if valid <= 0:
        return
    zero = np.zeros(1, dtype=W.dtype)[0]
    z = np.empty((4, M), dtype=W.dtype)
    i0 = rows[g, r0]
    i1 = rows[g, r0 + 1] if valid > 1 else i0
    i2 = rows[g, r0 + 2] if valid > 2 else i0
    i3 = rows[g, r0 + 3] if valid > 3 else i0
    _forward(W[g], X, i0, i1, i2, i3, z, zero)
    for r in range(valid):
        out[g, :, r0 + r] = z[r]


@njit(parallel=True, **_JIT)
def _logits(X, rows, count, W, out):
    blocks = -(-rows.shape[1] // 4)
    for j in prange(W.shape[0] * blocks):
        _block_logits(X, rows, count, W, out, j, blocks)


def compiled_once(kernel: Callable[..., None], dtype: np.dtype, *args: Any) -> None:
    """``kernel(*args)``; its first call for ``dtype`` in this process holds ``COMPILE_LOCK`` (see there)."""
    key = (kernel.__name__, np.dtype(dtype).str)
    if key in _called:
        kernel(*args)
        return
    with FileLock(str(COMPILE_LOCK)):
        kernel(*args)
    _called.add(key)


def sync_threads() -> int:
    """Threads for the kernels: torch's setting, so that one knob governs both."""
    threads = min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
    numba.set_num_threads(threads)
    return threads


def linear_gradients(X: np.ndarray, T: np.ndarray, rows: np.ndarray, count: np.ndarray, weight: np.ndarray,
                     W: np.ndarray, grad: np.ndarray, mse: bool) -> None:
    """Fill ``grad [G, M, k + 1]`` with the gradient of each group's weighted loss on its rows.

    ``X [n, k]`` features (``[n, k + 1]`` with their column of ones), ``T [n, C]`` targets (one-hot, or
    relatedness's distributions), ``rows [G, B]`` the step's rows (the first ``count[g]`` are group ``g``'s),
    ``weight [G]`` each group's loss weight per row, ``W [G, M, k + 1]`` weights (``M = L x C``). Two classes
    with cross-entropy take the second class's gradient as the negative of the first's: targets must be one-hot.
    Fewer groups than threads: each group's rows are split between threads when that is worth a reduction.
    """
    threads = sync_threads()
    G, M, width = W.shape
    parts = 1
    if G < threads and int(count.max(initial=0)) * M * width >= SPLIT_WORK:
        parts = -(-threads // G)
    compiled_once(_gradients, W.dtype, X, T, rows, count, weight, W, grad, parts, mse)


def linear_logits(X: np.ndarray, rows: np.ndarray, count: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Logits ``[G, M, Nd]`` of each group's rows ``rows[g, :count[g]]`` (0 past them)."""
    sync_threads()
    out = np.zeros((W.shape[0], W.shape[1], rows.shape[1]), dtype=W.dtype)
    compiled_once(_logits, W.dtype, X, rows, count, W, out)
    return out
