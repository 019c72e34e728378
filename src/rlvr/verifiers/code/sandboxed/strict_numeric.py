"""numpy's comparisons made shape-strict inside the trusted judge (`strict_numeric`).

numpy compares by broadcasting, and the `all` of an empty array is true: `np.allclose([],
2.0)`, `np.allclose([], [2.0])` and `np.testing.assert_allclose([], x)` all hold, so an
answer of `[]` passes a check written with them. The judge cannot see which side of an
assert is the expected value, so it changes the comparisons themselves, in the one
process that runs a check's test code (a fork of the judge server per check, so the
server and the next check never see the change). The candidate's code runs in another
sandbox and only sends plain data back: nothing it does reaches these functions.

Under `install()`, "the same shape" means the same number of elements in the same
arrangement, dimensions of length 1 aside (a scalar answer 2.0 matches an expected
`[2.0]`; `[]` matches nothing but an empty expected value; one value never stands for
many):
  - whole-array verdicts: `np.allclose`, `np.testing.assert_allclose`,
    `assert_array_equal`, `assert_array_almost_equal`, `assert_array_less` (and through
    them `assert_equal`/`assert_almost_equal` on arrays) require the same shape (like
    numpy's own `strict=True`, but without its dtype check, so `[2, 4]` still equals
    `np.array([2.0, 4.0])`). A scalar against a longer array is a mismatch there:
    write the expected value with the shape the answer must have.
  - elementwise `np.isclose` and broadcasting `np.array_equiv` also keep comparing an
    array with a scalar (the "every element is c" idiom), but never an empty side with
    a non-empty one: isclose then returns all-False of the larger shape, so
    `np.all(...)` is False.
  - `np.array_equal` already refuses different shapes; it is left as it is.
Anything whose shape numpy cannot take (ragged lists) goes to the original function.
Not covered: `np.all(np.array(answer) == c)` (ndarray's own `==` cannot be changed);
checks should compare shapes first (docs/CODE_SANDBOX.md, "numpy checks").
"""

from __future__ import annotations

import functools
import inspect
import math

_WHOLE = ("assert_allclose", "assert_array_equal", "assert_array_almost_equal",
          "assert_array_less")


def _shapes(np, a, b):
    """(shape of a, shape of b), or None where numpy cannot make arrays of them."""
    try:
        return np.shape(a), np.shape(b)
    except Exception:
        return None


def _size(shape) -> int:
    return math.prod(shape)


def _same(sa, sb) -> bool:
    """The same elements in the same arrangement, dimensions of length 1 aside."""
    return sa == sb or (_size(sa) == _size(sb)
                        and [d for d in sa if d != 1] == [d for d in sb if d != 1])


def _elementwise_ok(sa, sb) -> bool:
    """The same shape, or a scalar against a non-empty array."""
    if _same(sa, sb):
        return True
    return (sa == () and _size(sb) > 0) or (sb == () and _size(sa) > 0)


def _strict(np, original, allowed, refused):
    """`original` that first takes the shapes of its two compared arguments (the first
    two parameters, passed by position or by name) and answers `refused(shapes)`
    instead of calling it when `allowed(*shapes)` is false."""
    try:
        signature = inspect.signature(original)
    except (TypeError, ValueError):  # no signature to read: positional arguments only
        signature = None

    @functools.wraps(original)
    def strict(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs).arguments if signature else dict(
                enumerate(args))
        except TypeError:  # a wrong call: numpy's own error
            return original(*args, **kwargs)
        values = list(bound.values())[:2]
        shapes = _shapes(np, *values) if len(values) == 2 else None
        if shapes is not None and not allowed(*shapes):
            return refused(shapes)
        return original(*args, **kwargs)
    return strict


def _false(shapes):
    return False


def _all_false(np):
    def refused(shapes):  # np.all / .all() / all() of it are False
        larger = max(shapes, key=_size)
        return np.zeros(larger, dtype=bool) if larger else np.False_
    return refused


def _fail(shapes):
    raise AssertionError(f"strict_numeric: shapes differ: {shapes[0]} vs {shapes[1]}")


def install() -> None:
    """Make numpy's comparisons shape-strict in this process (imports numpy; nothing
    to do where numpy is not importable: test code using it fails on its own import)."""
    try:
        import numpy as np
        import numpy.testing
    except ImportError:
        return

    np.allclose = _strict(np, np.allclose, _same, _false)
    np.isclose = _strict(np, np.isclose, _elementwise_ok, _all_false(np))
    np.array_equiv = _strict(np, np.array_equiv, _elementwise_ok, _false)
    # numpy.testing's own assert_equal / assert_almost_equal call these by their module
    # globals, so the private module gets the same wrappers as the public names.
    try:
        from numpy.testing._private import utils as private
    except ImportError:  # a numpy that moved it: the public names still are covered
        private = None
    for name in _WHOLE:
        original = getattr(numpy.testing, name, None)
        if original is None:
            continue
        wrapped = _strict(np, original, _same, _fail)
        setattr(numpy.testing, name, wrapped)
        if private is not None and getattr(private, name, None) is original:
            setattr(private, name, wrapped)


def wanted(spec: dict) -> bool:
    """Whether this check's trusted code may use numpy at all (then install() is worth
    its import); names only, so a check without numpy pays nothing."""
    if not spec.get("strict_numeric"):
        return False
    texts = [spec.get("test") or "", spec.get("prompt") or "", spec.get("setup") or "",
             *(spec.get("asserts") or [])]
    return any("numpy" in text for text in texts)
