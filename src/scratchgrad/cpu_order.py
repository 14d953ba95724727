"""The orders PyTorch's CPU kernels leave equal entries in, for ``topk``, ``sort`` (not
stable), ``kthvalue``, and ``nanmedian`` and ``mode`` of NaNs: their algorithms (libstdc++'s
``std::sort``, ``std::nth_element`` and ``std::partial_sort``, and ATen's own quickselect for
``kthvalue``) taken step by step on one row, so that among ties scratchgrad picks the indices
PyTorch picks.

These are Python loops over one row's entries, the one place the tensor engine has them:
``redo_rows`` runs them only on the rows whose answer the order of ties decides (rows with
equal entries, or NaNs); every other row keeps what one NumPy sort gave.

The algorithms take ``before(x, y)``, the kernel's comparison (NaN counts as the largest
value, but in ``mode``'s plain ``<``), and a list of (value, index) pairs, which they
reorder in place.

>>> row = [(1.0, 0), (3.0, 1), (3.0, 2), (2.0, 3), (3.0, 4)]
>>> top_indices(row, 2, largest=True, sorted=True)  # torch.tensor([1., 3., 3., 2., 3.]).topk(2)
[2, 4]
"""

import operator
from collections.abc import Callable

import numpy

Less = Callable[[float, float], bool]
_THRESHOLD = 16  # libstdc++'s _S_threshold: shorter runs are left to insertion sort
# The most entries of a tensor whose ties are replayed (at most about 40 ms of Python); larger
# tensors keep a stable sort's order among ties, which PyTorch does not promise either.
MOST_ENTRIES = 1 << 16


def redo_rows(values: numpy.ndarray, indices: numpy.ndarray, pick: Callable, every_row: bool):
    """``indices`` (rows of a stable sort's answer, one row per row of ``values``) with each
    row of ``values`` that holds equal entries (or two NaNs), or every row, answered by
    ``pick`` (a list of (value, index) pairs -> the indices); None where no row needs it."""
    if values.dtype.kind == "V" or (values.dtype.kind == "f" and values.itemsize < 4):
        values = values.astype(numpy.float32)  # 16-bit floats, exactly (bfloat16's kind is V)
    redo = numpy.ones(len(values), bool) if every_row else _tied(values)
    if not redo.any():
        return None
    indices = indices.copy()
    for r in numpy.flatnonzero(redo):
        indices[r] = pick(list(zip(values[r].tolist(), range(values.shape[1]))))
    return indices


def _tied(values: numpy.ndarray) -> numpy.ndarray:
    """Which rows hold two entries that compare equal (0.0 and -0.0, two NaNs)."""
    ordered = numpy.sort(values, axis=1)
    same = ordered[:, 1:] == ordered[:, :-1]
    if values.dtype.kind in "fc":
        nan = numpy.isnan(ordered)
        same |= nan[:, 1:] & nan[:, :-1]
    return same.any(axis=1)


def sorted_indices(row: list, descending: bool) -> list:
    """``sort(stable=False)``'s order of one row: ``std::sort``."""
    sort(row, greater if descending else less)
    return [i for _, i in row]


def top_indices(row: list, k: int, largest: bool, sorted: bool) -> list:
    """``topk``'s indices in one row: ``std::partial_sort`` for a small ``k`` (64 of them fit
    in the row), else ``std::nth_element`` and, if ``sorted``, ``std::sort`` of the entries
    before the ``k``-th (which nth_element already put in place)."""
    before = greater if largest else less
    if k * 64 <= len(row):
        partial_sort(row, k, before)
    elif k:
        nth_element(row, k - 1, before)
        if sorted:
            sort(row, before, 0, k - 1)
    return [i for _, i in row[:k]]


def kth_index(row: list, k: int) -> list:
    """``kthvalue``'s index in one row (``k`` from 1): ATen's quickselect."""
    quick_select(row, k - 1, less)
    return [row[k - 1][1]]


def mode_index(row: list) -> int:
    """``mode``'s index in one row: ATen sorts the row with ``<``, under which a NaN is
    neither before nor after anything (``std::sort`` leaves NaNs where its steps put them),
    and takes the last entry of the first longest run of equal entries (a NaN, equal to
    nothing, is a run of one).

    >>> mode_index([(float("nan"), 0), (2.0, 1), (1.0, 2)])  # torch.tensor([nan, 2., 1.]).mode()
    0
    """
    sort(row, operator.lt)
    longest = length = end = 0
    for i, (value, _) in enumerate(row):
        length += 1
        if i == len(row) - 1 or value != row[i + 1][0]:
            if length > longest:
                longest, end = length, i
            length = 0
    return row[end][1]


def nan_row_median_index(n: int) -> int:
    """``nanmedian``'s index in a row of ``n`` NaNs. ATen asks ``std::nth_element`` for the
    entry at ``(0 - 1) / 2`` (0: C++ division truncates) under a comparison that puts no NaN
    before another, so the pick depends on ``n`` alone. Among numbers that comparison breaks
    ties by index, which is a stable sort's order and needs no replay.

    >>> nan_row_median_index(5)  # torch.full((5,), float("nan")).nanmedian(0).indices
    2
    """
    row = [(float("nan"), i) for i in range(n)]
    nth_element(row, 0, less)
    return row[0][1]


def greater(x: float, y: float) -> bool:
    """PyTorch's descending comparison: NaN before everything, then the larger value."""
    return (x != x and y == y) or x > y


def less(x: float, y: float) -> bool:
    """PyTorch's ascending comparison: the smaller value first, NaN after everything."""
    return (x == x and y != y) or x < y


def sort(row: list, before: Less, start: int = 0, end: int | None = None) -> None:
    """``std::sort`` of ``row[start:end]``: introsort, then a final insertion sort."""
    end = len(row) if end is None else end
    if end - start > 1:
        _introsort(row, start, end, 2 * ((end - start).bit_length() - 1), before)
        _final_insertion_sort(row, start, end, before)


def nth_element(row: list, nth: int, before: Less) -> None:
    """``std::nth_element``: ``row[nth]`` the entry a sort would put there, none before it
    after it and none after it before it."""
    start, end = 0, len(row)
    if nth == end:
        return
    depth = 2 * (end.bit_length() - 1)
    while end - start > 3:
        if depth == 0:
            _heap_select(row, start, nth + 1, end, before)
            row[start], row[nth] = row[nth], row[start]
            return
        depth -= 1
        cut = _partition_around_median(row, start, end, before)
        if cut <= nth:
            start = cut
        else:
            end = cut
    _insertion_sort(row, start, end, before)


def partial_sort(row: list, middle: int, before: Less) -> None:
    """``std::partial_sort``: the first ``middle`` entries sorted, through a heap."""
    _heap_select(row, 0, middle, len(row), before)
    _sort_heap(row, 0, middle, before)


def quick_select(row: list, k: int, before: Less) -> None:
    """ATen's ``quick_select_template`` (kthvalue's): ``row[k]`` the entry a sort would put
    there, ``before`` the order it sorts in (its pivot the median of three)."""
    low, high = 0, len(row) - 1
    while high > low:
        if high == low + 1:
            if before(row[high][0], row[low][0]):
                row[low], row[high] = row[high], row[low]
            return
        middle = low + (high - low) // 2
        row[middle], row[low + 1] = row[low + 1], row[middle]
        for a, b in ((low + 1, high), (low, high), (low + 1, low)):
            if before(row[b][0], row[a][0]):
                row[a], row[b] = row[b], row[a]
        i, j, pivot = low + 1, high, row[low][0]
        while True:
            i += 1
            while before(row[i][0], pivot):
                i += 1
            j -= 1
            while before(pivot, row[j][0]):
                j -= 1
            if j < i:
                break
            row[i], row[j] = row[j], row[i]
        row[low], row[j] = row[j], row[low]
        if j <= k:
            low = i
        if j >= k:
            high = j - 1


def _introsort(row: list, start: int, end: int, depth: int, before: Less) -> None:
    while end - start > _THRESHOLD:
        if depth == 0:  # heapsort
            _heap_select(row, start, end, end, before)
            _sort_heap(row, start, end, before)
            return
        depth -= 1
        cut = _partition_around_median(row, start, end, before)
        _introsort(row, cut, end, depth, before)
        end = cut


def _sort_heap(row: list, start: int, end: int, before: Less) -> None:
    for last in range(end - 1, start, -1):
        _pop_heap(row, start, last, last, before)


def _partition_around_median(row: list, start: int, end: int, before: Less) -> int:
    """``std::__unguarded_partition_pivot``: the median of the second, middle and last entries
    moved first, then Hoare's partition of the rest around it."""
    a, b, c = start + 1, start + (end - start) // 2, end - 1
    value = [row[a][0], row[b][0], row[c][0]]
    if before(value[0], value[1]):
        median = b if before(value[1], value[2]) else (c if before(value[0], value[2]) else a)
    else:
        median = a if before(value[0], value[2]) else (c if before(value[1], value[2]) else b)
    row[start], row[median] = row[median], row[start]
    pivot, first, last = row[start][0], start + 1, end
    while True:
        while before(row[first][0], pivot):
            first += 1
        last -= 1
        while before(pivot, row[last][0]):
            last -= 1
        if first >= last:
            return first
        row[first], row[last] = row[last], row[first]
        first += 1


def _insertion_sort(row: list, start: int, end: int, before: Less) -> None:
    for i in range(start + 1, end):
        entry = row[i]
        if before(entry[0], row[start][0]):
            row[start + 1 : i + 1] = row[start:i]
            row[start] = entry
        else:
            _linear_insert(row, i, before)


def _linear_insert(row: list, i: int, before: Less) -> None:
    entry = row[i]
    while before(entry[0], row[i - 1][0]):
        row[i] = row[i - 1]
        i -= 1
    row[i] = entry


def _final_insertion_sort(row: list, start: int, end: int, before: Less) -> None:
    if end - start <= _THRESHOLD:
        _insertion_sort(row, start, end, before)
        return
    _insertion_sort(row, start, start + _THRESHOLD, before)
    for i in range(start + _THRESHOLD, end):
        _linear_insert(row, i, before)


def _heap_select(row: list, start: int, middle: int, end: int, before: Less) -> None:
    """``std::__heap_select``: a heap of ``row[start:middle]`` keeping the entries that sort
    first, each later entry that sorts before its top replacing that top."""
    length = middle - start
    for parent in range((length - 2) // 2, -1, -1):  # std::__make_heap
        _adjust_heap(row, start, parent, length, row[start + parent], before)
    for i in range(middle, end):
        if before(row[i][0], row[start][0]):
            _pop_heap(row, start, middle, i, before)


def _pop_heap(row: list, start: int, last: int, result: int, before: Less) -> None:
    entry = row[result]
    row[result] = row[start]
    _adjust_heap(row, start, 0, last - start, entry, before)


def _adjust_heap(row: list, start: int, hole: int, length: int, entry, before: Less) -> None:
    """``std::__adjust_heap``: the hole sifted down to a leaf, then ``entry`` pushed up."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if before(row[start + child][0], row[start + child - 1][0]):
            child -= 1
        row[start + hole] = row[start + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        row[start + hole] = row[start + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and before(row[start + parent][0], entry[0]):
        row[start + hole] = row[start + parent]
        hole = parent
        parent = (hole - 1) // 2
    row[start + hole] = entry
