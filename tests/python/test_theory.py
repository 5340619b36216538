"""The theory functions on NumPy arrays against dense NumPy peers: U_k = W_gate^T diag(W_down[k, :]) W_up
formed explicitly (theory/quadratic_ffn.md), S_k = (U_k + U_k^T)/2 diagonalised by numpy.linalg.eigh, and
the cone fit's alpha = ||mean of the unit rows|| (theory/cone_model.md)."""
import numpy as np

import sinkscope


def random_ffn(rng, d=24, d_ff=40):
    return rng.normal(size=(d_ff, d)), rng.normal(size=(d_ff, d)), rng.normal(size=(d, d_ff))


def dense_u(gate, up, down, k):
    return gate.T @ np.diag(down[k]) @ up


def test_frobenius_norms_match_dense():
    gate, up, down = random_ffn(np.random.default_rng(0))
    got = sinkscope.channel_frobenius_norms(gate, up, down)
    ref = np.array([np.linalg.norm(dense_u(gate, up, down, k)) for k in range(down.shape[0])])
    assert got.shape == ref.shape
    assert np.abs(got - ref).max() <= 1e-10 * ref.max()
    # float32 input is converted (copied) to float64, same answer
    assert np.allclose(sinkscope.channel_frobenius_norms(gate.astype(np.float32), up.astype(np.float32), down.astype(np.float32)),
                       channel_norms_f32(gate, up, down), rtol=1e-12)


def channel_norms_f32(gate, up, down):
    g, u, w = (a.astype(np.float32).astype(np.float64) for a in (gate, up, down))
    return np.array([np.linalg.norm(dense_u(g, u, w, k)) for k in range(w.shape[0])])


def test_spectrum_matches_eigh():
    gate, up, down = random_ffn(np.random.default_rng(1))
    k = 5
    s = sinkscope.channel_spectrum(gate, up, down, k, nev=3)
    U = dense_u(gate, up, down, k)
    vals, vecs = np.linalg.eigh((U + U.T) / 2)
    order = np.argsort(-np.abs(vals))[:3]
    assert np.abs(s["eigenvalues"] - vals[order]).max() <= 1e-8 * np.abs(vals).max()
    assert s["eigenvectors"].shape == (24, 3)
    for j in range(3):  # eigenvectors up to sign
        assert abs(abs(s["eigenvectors"][:, j] @ vecs[:, order[j]]) - 1) <= 1e-8


def test_cone_fit_and_prediction():
    rng = np.random.default_rng(2)
    axis = rng.normal(size=16)
    values = 3.0 * axis / np.linalg.norm(axis) + rng.normal(size=(200, 16)) * 0.5
    fit = sinkscope.fit_cone(values)
    unit = values / np.linalg.norm(values, axis=1, keepdims=True)
    alpha = np.linalg.norm(unit.mean(0))
    assert abs(fit["alpha"] - alpha) <= 1e-12
    assert abs(abs(fit["axis"] @ (unit.mean(0) / alpha)) - 1) <= 1e-12
    assert abs(fit["mean_norm_sq"] - (np.linalg.norm(values, axis=1) ** 2).mean()) <= 1e-9
    p = np.full(10, 0.1)
    assert abs(sinkscope.cone_expected_norm_sq(fit["alpha"], float((p ** 2).sum())) -
               (alpha ** 2 + (1 - alpha ** 2) * 0.1)) <= 1e-12


def test_on_smollm2_weights(smollm2):
    gate, up, down = smollm2.ffn_weights(3)
    assert gate.shape == (1536, 576) and down.shape == (576, 1536)
    norms = sinkscope.channel_frobenius_norms(gate, up, down)
    k = int(np.argmax(norms))
    g, u, w = (a.astype(np.float64) for a in (gate, up, down))
    assert abs(norms[k] - np.linalg.norm(dense_u(g, u, w, k))) <= 1e-9 * norms[k]
