"""Training by hand: the backward pass of the course's transformer, and AdamW, in NumPy.

Each function is the chain rule of one forward equation of :mod:`helpers.reference`,
written with the same conventions (row vectors, population-variance layer norm with
``eps`` inside the square root, pre-norm block, causal attention scaled by
``1/sqrt(d_h)``, LM head tied to the token embeddings, optional final layer norm).
A backward function takes the forward's inputs and ``d_out``, the gradient of the loss
with respect to the forward's output (same shape as the output), and returns the
gradients with respect to the inputs and parameters (each shaped like what it is the
gradient of):

    cross-entropy      dL/dlogits = (softmax(logits) - onehot(targets)) / N
    linear             y = x W + b:     dx = dy W^T,  dW = x^T dy,  db = sum_rows dy
    ReLU               dz = dy * [z > 0]
    GELU               dz = dy * (Phi(z) + z phi(z))
    layer norm         dx = (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) / sqrt(var + eps),
                       dxhat = dy * gamma,  dgamma = sum xhat dy,  dbeta = sum dy
    attention          dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(P * dP)),
                       dQ = dS K / sqrt(d_k),  dK = dS^T Q / sqrt(d_k)
    embedding          dE[v] = sum of dX[i] over the positions i with ids[i] = v (np.add.at),
                       dP[:N] = dX
    residual           y = f(x) + x:    dx = dy + (df/dx)^T dy
    tied head          logits = h E^T:  dh = dlogits E,  dE += dlogits^T h

:func:`loss_and_grads` chains them into the gradient of the whole model; :func:`adamw_step`,
:func:`lr_schedule` and :func:`clip_by_global_norm` turn gradients into a training step.

Every function accepts leading batch dimensions (``[B, N, d]`` as well as ``[N, d]``);
a parameter's gradient is summed over them. The public functions compute in float64 and
raise ``ValueError`` (never return NaN or warn) when a product would exceed float64.
:func:`loss_and_grads` and :func:`adamw_step` keep the dtype of ``params`` (float32
for fast training, float64 for checking).

One module per part: :mod:`~helpers.training.backward` (the gradient check and the
backward functions), :mod:`~helpers.training.optim` (AdamW, the schedule, clipping),
:mod:`~helpers.training.data` (parameter trees, initialisation, batches) and
:mod:`~helpers.training.kernels` (the computations, without checks); this package
re-exports the public names.
"""

from helpers.training.kernels import BLOCK_KEYS, LN_EPS  # noqa: F401
from helpers.training.backward import (  # noqa: F401
    numerical_gradient, relative_error, cross_entropy_backward, linear_backward, relu_backward, gelu, gelu_backward, layer_norm_backward, attention_backward, embed_backward, multi_head_attention_backward, feed_forward_backward, transformer_block_backward, transformer_block_with_cache, loss_and_grads, language_model_loss, sample)
from helpers.training.optim import (  # noqa: F401
    adamw_update, adamw_step, adamw_init, decays, lr_schedule, clip_by_global_norm, global_norm)
from helpers.training.data import (  # noqa: F401
    init_params, flatten, unflatten, tree_map, get_batch, PLAY_PATH, load_play)

__all__ = ['numerical_gradient', 'relative_error', 'cross_entropy_backward', 'linear_backward', 'relu_backward', 'gelu', 'gelu_backward', 'layer_norm_backward', 'attention_backward', 'embed_backward', 'multi_head_attention_backward', 'feed_forward_backward', 'transformer_block_backward', 'transformer_block_with_cache', 'loss_and_grads', 'language_model_loss', 'sample', 'adamw_update', 'adamw_step', 'adamw_init', 'decays', 'lr_schedule', 'clip_by_global_norm', 'global_norm', 'init_params', 'flatten', 'unflatten', 'tree_map', 'get_batch', 'BLOCK_KEYS', 'PLAY_PATH', 'load_play']
