"""Answers to ``count_block_parameters(d, d_ff)`` (notebook 07)."""

WRONG = {
    "no_biases": ("""def count_block_parameters(d, d_ff):
    return 4 * d * d + 2 * d * d_ff + 4 * d
""", "count_block_parameters(4, 8) returned"),
    "no_layer_norms": ("""def count_block_parameters(d, d_ff):
    return 4 * d * d + d * d_ff + d_ff + d_ff * d + d
""", "Likely mistake: the two layer norms"),
    "gamma_only": ("""def count_block_parameters(d, d_ff):
    attention = 4 * d * d
    ffn = d * d_ff + d_ff + d_ff * d + d
    norms = 2 * d                     # forgot the betas
    return attention + ffn + norms
""", "count_block_parameters(4, 8) returned"),
    "no_W_O": ("""def count_block_parameters(d, d_ff):
    attention = 3 * d * d             # W_Q, W_K, W_V
    ffn = d * d_ff + d_ff + d_ff * d + d
    return attention + ffn + 4 * d
""", "Likely mistake: W_O [d, d] was not counted"),
    "biases_swapped_size_d_ff_twice": ("""def count_block_parameters(d, d_ff):
    return 4 * d * d + 2 * d * d_ff + 2 * d_ff + 4 * d
""", "but a block with d=4, d_ff=8 has"),
    "assumes_d_ff_4d": ("""def count_block_parameters(d, d_ff):
    return 4 * d * d + 8 * d * d + 4 * d + d + 4 * d
""", "count_block_parameters(4, 8) returned"),
}

CORRECT = {
    "from_a_list_of_shapes": """def count_block_parameters(d, d_ff):
    shapes = [(d,), (d,), (d, d), (d, d), (d, d), (d, d), (d,), (d,),
              (d, d_ff), (d_ff,), (d_ff, d), (d,)]
    total = 0
    for shape in shapes:
        n = 1
        for s in shape:
            n *= s
        total += n
    return total
""",
    "factored": """def count_block_parameters(d, d_ff):
    return d * (4 * d + 2 * d_ff + 5) + d_ff
""",
    "numpy_sizes": """def count_block_parameters(d, d_ff):
    arrays = [np.empty(s) for s in [(d, d)] * 4 + [(d, d_ff), (d_ff,), (d_ff, d)] + [(d,)] * 5]
    return int(sum(a.size for a in arrays))
""",
}
