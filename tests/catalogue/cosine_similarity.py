"""Answers to ``cosine_similarity(a, b)`` (notebook 01)."""

WRONG = {
    "no_normalisation": ("""def cosine_similarity(a, b):
    return dot(a, b)
""", "divide by the lengths"),
    "squared_norms": ("""def cosine_similarity(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(a @ b / ((a @ a) * (b @ b)))
""", "square root"),
    "absolute_value": ("""def cosine_similarity(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return abs(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
""", "absolute value"),
    "cosine_distance": ("""def cosine_similarity(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return 1 - a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
""", "cosine distance"),
}

CORRECT = {
    "loops": """import math

def cosine_similarity(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    aa = math.sqrt(sum(x * x for x in a))
    bb = math.sqrt(sum(y * y for y in b))
    return ab / (aa * bb)
""",
    "unit_vectors": """def cosine_similarity(a, b):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return float((a / np.linalg.norm(a)) @ (b / np.linalg.norm(b)))
""",
}
