"""The hand operators' patterns as fusedml expressions, with the operator each one must select.

Leaves: X, Y, Z, W are m x n; U is m x k and V is n x k (a low-rank U @ V.T); v is an n-vector,
w and y are m-vectors; s is a runtime scalar.
"""

from __future__ import annotations

import fusedml as fm

PATTERNS = {
    # name: (builder, hand operators expected, leaves used)
    "sum(X*Y*Z)": (lambda d: fm.sum(d["X"] * d["Y"] * d["Z"]), ["tak+*[full]"]),
    "colsum(X*Y*Z)": (lambda d: fm.sum(d["X"] * d["Y"] * d["Z"], axis=0), ["tak+*[col]"]),
    "sum(X**2)": (lambda d: fm.sum(d["X"] ** 2), ["uasqk+[full]"]),
    "rowsum(X*X)": (lambda d: fm.sum(d["X"] * d["X"], axis=1), ["uasqk+[row]"]),
    "colsum(X**2)": (lambda d: fm.sum(d["X"] ** 2, axis=0), ["uasqk+[col]"]),
    "X.T@(X@v)": (lambda d: d["X"].T @ (d["X"] @ d["v"]), ["mmchain[XtXv]"]),
    "X.T@(w*(X@v))": (lambda d: d["X"].T @ (d["w"] * (d["X"] @ d["v"])), ["mmchain[XtwXv]"]),
    "X.T@(X@v-y)": (lambda d: d["X"].T @ ((d["X"] @ d["v"]) - d["y"]), ["mmchain[XtXv-y]"]),
    "X.T@X": (lambda d: d["X"].T @ d["X"], ["tsmm[left]"]),
    "X@X.T": (lambda d: d["X"] @ d["X"].T, ["tsmm[right]"]),
    "sum(W*(X-U@V.T)**2)": (
        lambda d: fm.sum(d["W"] * (d["X"] - d["U"] @ d["V"].T) ** 2),
        ["wsloss[post]"],
    ),
    "sum((X!=0)*(X-U@V.T)**2)": (
        lambda d: fm.sum((d["X"] != 0) * (d["X"] - d["U"] @ d["V"].T) ** 2),
        ["wsloss[post_nz]"],
    ),
    "sum((U@V.T-X)**2)": (lambda d: fm.sum((d["U"] @ d["V"].T - d["X"]) ** 2), ["wsloss[none]"]),
    "W*sigmoid(U@V.T)": (lambda d: d["W"] * fm.sigmoid(d["U"] @ d["V"].T), ["wsigmoid[basic]"]),
    "W*log(sigmoid(-U@V.T))": (
        lambda d: d["W"] * fm.log(fm.sigmoid(-(d["U"] @ d["V"].T))),
        ["wsigmoid[log_minus]"],
    ),
    "(W*(U@V.T))@V": (lambda d: (d["W"] * (d["U"] @ d["V"].T)) @ d["V"], ["wdivmm[mult_right]"]),
    "(W/(U@V.T))@V": (lambda d: (d["W"] / (d["U"] @ d["V"].T)) @ d["V"], ["wdivmm[div_right]"]),
    "(W*(U@V.T)).T@U": (
        lambda d: (d["W"] * (d["U"] @ d["V"].T)).T @ d["U"],
        ["wdivmm[mult_left]"],
    ),
    "U.T@(W/(U@V.T))": (
        lambda d: d["U"].T @ (d["W"] / (d["U"] @ d["V"].T)),
        ["wdivmm[div_left_t]"],
    ),
    "sum(X*log(U@V.T+s))": (
        lambda d: fm.sum(d["X"] * fm.log(d["U"] @ d["V"].T + d["s"])),
        ["wcemm[eps]"],
    ),
    "sum(X*log(U@V.T))": (lambda d: fm.sum(d["X"] * fm.log(d["U"] @ d["V"].T)), ["wcemm[basic]"]),
    "X*exp(U@V.T)": (lambda d: d["X"] * fm.exp(d["U"] @ d["V"].T), ["wumm[mult_exp]"]),
    "X/abs(U@V.T)": (lambda d: d["X"] / fm.abs(d["U"] @ d["V"].T), ["wumm[div_abs]"]),
    "X*(U@V.T)**2": (lambda d: d["X"] * (d["U"] @ d["V"].T) ** 2, ["wumm[mult_pow2]"]),
    "X+s*Y": (lambda d: d["X"] + d["s"] * d["Y"], ["axpy[plus]"]),
    "X-Y*s": (lambda d: d["X"] - d["Y"] * d["s"], ["axpy[minus]"]),
    "1-X*Y": (lambda d: 1 - d["X"] * d["Y"], ["1-*[basic]"]),
    "X*(1-X)": (lambda d: d["X"] * (1 - d["X"]), ["sprop[basic]"]),
    "sigmoid(X)": (lambda d: fm.sigmoid(d["X"]), ["sigmoid[basic]"]),
}
