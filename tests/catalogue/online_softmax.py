"""Answers to ``online_softmax(z, block_size)`` (notebook 13)."""

_ONLINE = """def online_softmax(z, block_size):
    z = np.asarray(z, dtype=float)
    m, l = -np.inf, 0.0
    for start in range({stop}):
        block = z[start:start + block_size]
        m_new = max(m, block.max())
        l = {update}
        m = m_new
    return np.exp(z - m) / l
"""

_OK = dict(stop="0, len(z), block_size",
           update="l * np.exp(m - m_new) + np.exp(block - m_new).sum()")


def _online(**changes):
    return _ONLINE.format(**{**_OK, **changes})


WRONG = {
    "sum_not_rescaled": (_online(update="l + np.exp(block - m_new).sum()"),
                         "not rescaled when the max grew"),
    "last_block_dropped": (_online(stop="0, len(z) - block_size + 1, block_size"),
                           "last, shorter block"),
    "rescaled_upside_down": (_online(update="(l * np.exp(m_new - m) if l else 0.0) + "
                                            "np.exp(block - m_new).sum()"),
                             "exp(m_old - m_new)"),
}

CORRECT = {
    "running_pair": _online(),
    "list_of_blocks": """def online_softmax(z, block_size):
    z = np.asarray(z, dtype=np.float64)
    blocks = [z[i:i + block_size] for i in range(0, len(z), block_size)]
    m = blocks[0].max()
    l = np.exp(blocks[0] - m).sum()
    for b in blocks[1:]:
        m_b = b.max()
        if m_b > m:
            l = l * np.exp(m - m_b)
            m = m_b
        l = l + np.exp(b - m).sum()
    return np.exp(z - m) / l
""",
    "log_sum_exp": """def online_softmax(z, block_size):
    z = np.asarray(z, dtype=float)
    lse = -np.inf
    for start in range(0, len(z), block_size):
        b = z[start:start + block_size]
        lse = np.logaddexp(lse, np.logaddexp.reduce(b))
    return np.exp(z - lse)
""",
}
