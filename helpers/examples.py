"""The worked examples of the lecture slides, as data: one copy for notebooks and tests.

Every value here is an *input* from the slides or a number the slides print. What the
course computes from them lives in the notebooks and is pinned in ``tests/``. Where the
slides slipped, both the slide's number and the right one are kept, so that a notebook
can ask the learner to find the slip.
"""

from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------------------------------
# 1. "The cat sat <end>": four tokens, d = 4
# ---------------------------------------------------------------------------------------
CAT_TOKENS = ["The", "cat", "sat", "<end>"]

#: One embedding per row (row-vector convention).
CAT_X = np.array([
    [1.0, 0.5, 0.2, 0.1],   # The
    [0.5, 1.0, 0.3, 0.2],   # cat
    [0.3, 0.2, 1.0, 0.5],   # sat
    [0.1, 0.1, 0.1, 1.0],   # <end>
])

#: What the slides print for "The" in the example without weights (rounded per step).
CAT_SLIDE_SIMPLE = {
    "scores_the": [1.30, 1.08, 0.65, 0.27],        # x_The . x_j
    "scaled_the": [0.65, 0.54, 0.325, 0.135],      # divided by sqrt(4) = 2
    "weights_the": [0.311, 0.278, 0.225, 0.186],
    "output_the": [0.537, 0.498, 0.389, 0.386],
}

CAT_W_Q = np.array([
    [1.0, 0.0, 0.5, 0.0],
    [0.0, 1.0, 0.0, 0.5],
    [0.5, 0.0, 1.0, 0.0],
    [0.0, 0.5, 0.0, 1.0],
])
CAT_W_K = np.array([
    [1.0, 0.2, 0.0, 0.0],
    [0.2, 1.0, 0.0, 0.0],
    [0.0, 0.0, 1.0, 0.3],
    [0.0, 0.0, 0.3, 1.0],
])
CAT_W_V = np.array([
    [0.8, 0.0, 0.0, 0.1],
    [0.0, 0.9, 0.1, 0.0],
    [0.0, 0.1, 0.8, 0.0],
    [0.1, 0.0, 0.0, 0.9],
])

#: What the slides print in the example with W_Q, W_K, W_V. It contains slips: the V
#: rows listed for "cat", "sat" and "<end>" repeat K's rows; V("The") is printed as
#: [0.82, 0.47, 0.17, 0.19]; K("<end>") as [0.12, 0.12, 0.33, 1.03]; the final
#: sum uses yet other V rows, so its output for "The" is off.
CAT_SLIDE_WEIGHTED = {
    "Q": [[1.1, 0.55, 0.7, 0.35], [0.65, 1.1, 0.55, 0.7],
          [0.8, 0.45, 1.15, 0.6], [0.15, 0.6, 0.15, 1.05]],
    "K": [[1.1, 0.7, 0.23, 0.16], [0.7, 1.1, 0.36, 0.29],
          [0.34, 0.26, 1.15, 0.8], [0.12, 0.12, 0.33, 1.03]],
    "V_listed": [[0.82, 0.47, 0.17, 0.19], [0.7, 1.1, 0.36, 0.29],
                 [0.34, 0.26, 1.15, 0.8], [0.12, 0.12, 0.33, 1.03]],
    "V_used_in_sum": [[0.82, 0.47, 0.17, 0.19], [0.42, 0.93, 0.34, 0.23],
                      [0.26, 0.19, 0.82, 0.48], [0.18, 0.10, 0.09, 0.91]],
    "scores_the": [1.812, 1.729, 1.602, 0.790],
    "scaled_the": [0.906, 0.865, 0.801, 0.395],
    "weights_the": [0.289, 0.277, 0.260, 0.173],
    "output_the": [0.452, 0.460, 0.372, 0.401],
}

# ---------------------------------------------------------------------------------------
# 2. "we wash our cats": the pen-and-paper activity (d_x = 4, d_k = 3)
# ---------------------------------------------------------------------------------------
WASH_TOKENS = ["we", "wash", "our", "cats"]
WASH_X1 = np.array([3.0, 0.0, 1.0, -0.5])   # the embedding of "we"
WASH_W_Q = np.array([[1.5, 1, 2], [3, -2, 5], [1, 2, -2], [9, 4, 2]], dtype=float)
WASH_W_K = np.array([[1, .5, 2], [-2, .5, 3], [.5, 2, -3], [5, 3, 2]], dtype=float)
#: Keys of "wash", "our", "cats" as the activity gives them (k1 is computed from x1).
WASH_K_REST = np.array([[3, 4, 3], [5, 2, 3], [3, 2, 1]], dtype=float)
#: Values of all four tokens, as given.
WASH_V = np.array([[1, .5, -1], [4, 5, -2], [-3, 2, 2], [1, 1, 6]], dtype=float)
#: The activity says "assume d_k = 64", so the scores are divided by sqrt(64) = 8,
#: although the vectors shown have 3 entries.
WASH_SCALE = 8.0

# ---------------------------------------------------------------------------------------
# 3. "A A B A": large keys make attention peaked
# ---------------------------------------------------------------------------------------
AABA_TOKENS = ["A", "A", "B", "A"]
AABA_VOCAB = ["A", "B"]
AABA_E = np.eye(2)                       # one-hot embeddings: A = [1, 0], B = [0, 1]
AABA_IDS = np.array([0, 0, 1, 0])
AABA_W_K = 10.0 * np.eye(2)              # keys are 10x the embeddings
AABA_QUERY = np.array([0.0, 1.0])        # every position asks "where is B?"

# ---------------------------------------------------------------------------------------
# 4. "it was too tired / too wide": why static embeddings are not enough
# ---------------------------------------------------------------------------------------
IT_SENTENCES = {
    "tired": "The chicken didn't cross the road because it was too tired",
    "wide": "The chicken didn't cross the road because it was too wide",
}
