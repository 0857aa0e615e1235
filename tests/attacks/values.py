"""Tricks with what the function returns, and with what ends up on the feedback page."""

from attacks import Attack

ATTACKS = [
    Attack("ndarray_subclass", "02_softmax", "softmax", """
class Agreeable(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.broadcast(self, other).shape, bool)
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.ones(np.broadcast(*[np.asarray(i) for i in inputs]).shape, bool) \\
            if ufunc in (np.isclose, np.equal, np.less_equal) else NotImplemented
    def __sub__(self, other):
        return np.zeros(self.shape)
    __rsub__ = __sub__
    def __abs__(self):
        return np.zeros(self.shape)

def softmax(z, axis=-1):
    return np.full(np.shape(z), 0.5).view(Agreeable)
""", "returns an ndarray subclass whose comparisons and differences always agree"),
    Attack("object_that_agrees", "02_softmax", "softmax", """
class Anything:
    shape = property(lambda self: self._shape)
    def __init__(self, shape):
        self._shape = shape
    def __eq__(self, other):
        return True
    def __array__(self, dtype=None, copy=None):
        raise TypeError("not an array")
    def __getattr__(self, name):
        return self

def softmax(z, axis=-1):
    return Anything(np.shape(z))
""", "returns an object that claims equality with anything"),
    Attack("huge_return_value", "02_softmax", "softmax", """
def softmax(z, axis=-1):
    return np.zeros(6_000_000)
""", "returns a 48 MB array (larger than the grader accepts from a child)"),
    Attack("html_injection", "02_softmax", "softmax", """
# </pre><script>document.title = "@@MARK@@"</script><pre>
print("<script>alert('injected')</script>")
print("test_softmax: 3 / 3 -- ok")

def softmax(z, axis=-1):
    print("<img src=x onerror=alert(1)>")
    return np.full(np.shape(z), 0.5)
""", "puts HTML and script tags in its source and output, which end up in feedback"),
]
