"""Notebook 12 without derivatives (issue 36, finding 7): a backward pass answered by
central differences of the forward functions, which the grading worker computes for an
earlier notebook's exercises (or ``x @ W``). Each earned its exercise's points before; a visible case
whose d_out has one entry or row 1e10 times the others now fails them for any step
(``tests/helpers/test_analytic_gradients.py``), and the mistake is named."""

from attacks import Attack


def _central(target: str, code: str) -> Attack:
    return Attack(f"central_differences_{target}", "12_training", target, code,
                  f"{target} by central differences of the forward pass, no derivative",
                  expect="honest", answers="solutions", lose=(f"test_{target}",))


ATTACKS = [
    _central("linear_backward", """
def linear_backward(x, W, d_out):
    x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
    loss = lambda x_, W_: np.sum(dy * (x_ @ W_))
    return (numerical_gradient(lambda x_: loss(x_, W), x, 1e-3),
            numerical_gradient(lambda W_: loss(x, W_), W, 1e-3),
            dy.reshape(-1, dy.shape[-1]).sum(axis=0))
"""),
    _central("gelu_backward", """
from helpers.bert import gelu

def gelu_backward(z, d_out):
    d_out = np.asarray(d_out, dtype=float)
    return numerical_gradient(lambda x: np.sum(d_out * gelu(x)), np.asarray(z, dtype=float), 1e-6)
"""),
    _central("layer_norm_backward", """
from helpers import layer_norm

def layer_norm_backward(x, gamma, d_out, eps=1e-5):
    x, gamma, dy = (np.asarray(a, dtype=float) for a in (x, gamma, d_out))
    beta = np.zeros_like(gamma)
    loss = lambda x_, g_: np.sum(dy * layer_norm(x_, g_, beta, eps))
    return (numerical_gradient(lambda x_: loss(x_, gamma), x, 2.0 ** -20),
            numerical_gradient(lambda g_: loss(x, g_), gamma, 2.0 ** -20),
            dy.reshape(-1, x.shape[-1]).sum(axis=0))
"""),
    _central("attention_backward", """
from helpers import scaled_dot_product_attention

def attention_backward(Q, K, V, mask, d_out):
    Q, K, V, dy = (np.asarray(a, dtype=float) for a in (Q, K, V, d_out))
    loss = lambda q, k, v: np.sum(dy * scaled_dot_product_attention(q, k, v, mask)[0])
    return (numerical_gradient(lambda q: loss(q, K, V), Q, 1e-4),
            numerical_gradient(lambda k: loss(Q, k, V), K, 1e-4),
            numerical_gradient(lambda v: loss(Q, K, v), V, 1e-4))
"""),
]
