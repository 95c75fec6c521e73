"""NumPy references (float64) for the llm.c steps of perf_public/llmc.yaml, written from what each operation
computes (GPT-2's layers), not from llm.c's code. Each takes the spec's inputs and sizes by name."""

import numpy as np

GELU_SCALE = np.sqrt(2.0 / np.pi)


def softmax(inp):
    x = np.asarray(inp, dtype=np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(inp, weight, bias):
    """out, mean and 1/std of each row (biased variance, eps 1e-5)."""
    x = np.asarray(inp, dtype=np.float64)
    mean = x.mean(axis=-1)
    rstd = 1.0 / np.sqrt(((x - mean[:, None]) ** 2).mean(axis=-1) + 1e-5)
    out = (x - mean[:, None]) * rstd[:, None] * weight + bias
    return {"out": out, "mean": mean, "rstd": rstd}


def encoder(inp, wte, wpe, T):
    """Token embedding plus position embedding: out[b, t] = wte[inp[b, t]] + wpe[t]."""
    ids = np.asarray(inp).reshape(-1, T)
    return np.asarray(wte, dtype=np.float64)[ids] + np.asarray(wpe, dtype=np.float64)[None, :T]


def residual(inp1, inp2):
    return np.asarray(inp1, dtype=np.float64) + inp2


def gelu(inp):
    x = np.asarray(inp, dtype=np.float64)
    return 0.5 * x * (1.0 + np.tanh(GELU_SCALE * (x + 0.044715 * x ** 3)))


def gelu_backward(inp, dout):
    x = np.asarray(inp, dtype=np.float64)
    arg = GELU_SCALE * (x + 0.044715 * x ** 3)
    grad = 0.5 * (1.0 + np.tanh(arg)) + x * 0.5 / np.cosh(arg) ** 2 * GELU_SCALE * (1.0 + 3.0 * 0.044715 * x * x)
    return grad * dout


def matmul(inp, weight, bias):
    """out = inp @ weight^T + bias (weight is OC x C)."""
    return np.asarray(inp, dtype=np.float64) @ np.asarray(weight, dtype=np.float64).T + bias


def bias_grad(dout, dbias, OC):
    """dbias += the sum of dout over its rows."""
    return np.asarray(dbias, dtype=np.float64) + np.asarray(dout, dtype=np.float64).reshape(-1, OC).sum(axis=0)


def adamw(params, grads, m, v, lr, beta1, beta2, c1, c2, eps, wd):
    """One AdamW step; the bias corrections c1, c2 given (1 - beta^t)."""
    g = np.asarray(grads, dtype=np.float64)
    m2 = beta1 * np.asarray(m, dtype=np.float64) + (1 - beta1) * g
    v2 = beta2 * np.asarray(v, dtype=np.float64) + (1 - beta2) * g * g
    p = np.asarray(params, dtype=np.float64)
    p2 = p - lr * ((m2 / c1) / (np.sqrt(v2 / c2) + eps) + wd * p)
    return {"params": p2, "m": m2, "v": v2}


def residual_layernorm(inp1, inp2, weight, bias):
    """The residual sum and its layernorm: residual, normed, mean, rstd."""
    r = np.asarray(inp1, dtype=np.float64) + inp2
    ln = layernorm(r, weight, bias)
    return {"residual": r, "normed": ln["out"], "mean": ln["mean"], "rstd": ln["rstd"]}


def layernorm_backward(dout, inp, weight, mean, rstd, C):
    """The gradients of a layernorm into zeroed buffers: dinp, dweight, dbias (mean and rstd given)."""
    x = np.asarray(inp, dtype=np.float64).reshape(-1, C)
    g = np.asarray(dout, dtype=np.float64).reshape(-1, C)
    norm = (x - np.asarray(mean, dtype=np.float64).reshape(-1, 1)) * np.asarray(rstd, dtype=np.float64).reshape(-1, 1)
    dnorm = g * weight
    dinp = (dnorm - dnorm.mean(axis=1, keepdims=True) - norm * (dnorm * norm).mean(axis=1, keepdims=True))
    dinp *= np.asarray(rstd, dtype=np.float64).reshape(-1, 1)
    return {"dinp": dinp.reshape(np.shape(inp)), "dweight": (norm * g).sum(axis=0), "dbias": g.sum(axis=0)}


def layernorm_backward_dinp(dout, inp, weight, mean, rstd, C):
    return layernorm_backward(dout, inp, weight, mean, rstd, C)["dinp"]


def layernorm_backward_dweight(dout, inp, weight, mean, rstd, C):
    return layernorm_backward(dout, inp, weight, mean, rstd, C)["dweight"]


def layernorm_backward_dbias(dout, inp, weight, mean, rstd, C):
    return layernorm_backward(dout, inp, weight, mean, rstd, C)["dbias"]
