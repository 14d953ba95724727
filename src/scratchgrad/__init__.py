"""scratchgrad: reverse-mode automatic differentiation from scratch.

``scratchgrad.scalar`` is the scalar engine (pure Python, no NumPy needed); the rest is the
tensor engine over NumPy, with PyTorch's names.
"""

import functools as _functools
import numbers as _numbers

try:
    import numpy  # noqa: F401
except ImportError:  # only the scalar engine (scratchgrad.scalar) works without NumPy
    pass
else:
    from scratchgrad import autograd  # noqa: I001  (before tensor: Function comes first)
    from scratchgrad.autograd.anomaly import (
        is_anomaly_check_nan_enabled,
        is_anomaly_enabled,
        set_anomaly_enabled,
    )
    from scratchgrad.autograd.grad_mode import (
        enable_grad,
        inference_mode,
        is_grad_enabled,
        is_inference_mode_enabled,
        no_grad,
        set_grad_enabled,
    )
    from scratchgrad.backend import (
        Generator,
        are_deterministic_algorithms_enabled,
        default_generator,
        device,
        dtype,
        get_default_device,
        get_num_threads,
        get_rng_state,
        initial_seed,
        is_deterministic_algorithms_warn_only_enabled,
        manual_seed,
        seed,
        set_default_device,
        set_num_threads,
        set_rng_state,
        use_deterministic_algorithms,
    )
    from scratchgrad.creation import (
        BFloat16Tensor,
        BoolTensor,
        ByteTensor,
        CharTensor,
        DoubleTensor,
        FloatTensor,
        HalfTensor,
        IntTensor,
        LongTensor,
        ShortTensor,
        arange,
        as_tensor,
        asarray,
        bartlett_window,
        blackman_window,
        block_diag,
        combinations,
        empty,
        empty_like,
        eye,
        from_numpy,
        full,
        full_like,
        hamming_window,
        hann_window,
        kaiser_window,
        linspace,
        logspace,
        normal,
        ones,
        ones_like,
        rand,
        rand_like,
        randint,
        randint_like,
        randn,
        randn_like,
        randperm,
        range,
        scalar_tensor,
        tensor,
        tril_indices,
        triu_indices,
        zeros,
        zeros_like,
    )
    from scratchgrad.dtypes import (
        can_cast,
        channels_last,
        channels_last_3d,
        contiguous_format,
        finfo,
        get_default_dtype,
        iinfo,
        layout,
        memory_format,
        preserve_format,
        promote_types,
        result_type,
        set_default_dtype,
        sparse_coo,
        strided,
    )
    from scratchgrad.printing import set_printoptions
    from scratchgrad.tensor import (
        Size,
        Tensor,
        bincount,
        broadcast_shapes,
        broadcast_tensors,
        bucketize,
        atleast_1d,
        atleast_2d,
        atleast_3d,
        cartesian_prod,
        cat,
        column_stack,
        cdist,
        cumulative_trapezoid,
        dstack,
        einsum,
        gradient,
        binomial,
        histc,
        isin,
        hstack,
        meshgrid,
        poisson,
        searchsorted,
        row_stack,
        rsub,
        stack,
        std_mean,
        tensordot,
        trapezoid,
        trapz,
        unravel_index,
        var_mean,
        vstack,
        where,
    )
    from scratchgrad.indexed_writes import (  # (also sets the methods on Tensor)
        as_strided_scatter,
        diagonal_scatter,
        index_put,
        index_put_,
        index_reduce,
        masked_scatter,
        narrow_copy,
        put,
        select_scatter,
        slice_scatter,
    )

    from scratchgrad.serialization import load, save
    from scratchgrad import linalg
    from scratchgrad import datasets, distributed, nn, optim, utils  # noqa: I001  (on Tensor)
    from scratchgrad.nn.root_functions import (  # torch.conv2d, torch.layer_norm, ...
        adaptive_avg_pool1d,
        adaptive_max_pool1d,
        affine_grid_generator,
        alpha_dropout,
        alpha_dropout_,
        avg_pool1d,
        batch_norm,
        bilinear,
        binary_cross_entropy_with_logits,
        celu,
        celu_,
        channel_shuffle,
        conv1d,
        conv2d,
        conv3d,
        conv_transpose1d,
        conv_transpose2d,
        conv_transpose3d,
        cosine_embedding_loss,
        cosine_similarity,
        embedding,
        feature_alpha_dropout,
        feature_dropout,
        grid_sampler,
        group_norm,
        hardshrink,
        hinge_embedding_loss,
        instance_norm,
        kl_div,
        layer_norm,
        margin_ranking_loss,
        max_pool1d,
        max_pool1d_with_indices,
        max_pool2d,
        max_pool3d,
        native_channel_shuffle,
        pairwise_distance,
        pdist,
        pixel_shuffle,
        pixel_unshuffle,
        poisson_nll_loss,
        prelu,
        relu_,
        rms_norm,
        rrelu,
        rrelu_,
        selu,
        selu_,
        threshold,
        threshold_,
        triplet_margin_loss,
    )
    from scratchgrad import distributions  # (on nn.functional and linalg)
    from scratchgrad import accelerator, backends, cuda
    from scratchgrad.backends import get_float32_matmul_precision, set_float32_matmul_precision
    from scratchgrad import amp, cpu  # noqa: I001  (autocast wraps nn's ops)
    from scratchgrad.amp import autocast, get_autocast_dtype
    from scratchgrad.amp.autocast_mode import torch_is_autocast_enabled as is_autocast_enabled
    from scratchgrad.compiled import compile
    from scratchgrad import compiler  # torch.compiler
    from scratchgrad import profiler  # torch.profiler (and torch.autograd.profiler)
    from scratchgrad import jit  # the package, callable as the function jit.jit
    from scratchgrad.jit import JitError
    from scratchgrad import func  # torch.func, and torch.vmap as its vmap
    from scratchgrad import special  # torch.special
    from scratchgrad import fft  # torch.fft
    from scratchgrad.complex_numbers import complex, polar, view_as_complex, view_as_real
    from scratchgrad import signal  # torch.signal (its windows)
    from scratchgrad.spectral import istft, stft  # (also attaches Tensor.stft, .istft)
    from scratchgrad import testing  # torch.testing
    from scratchgrad import statistics  # (also attaches Tensor.quantile, .cov, .mode, ...)
    from scratchgrad.statistics import (
        corrcoef,
        cov,
        histogram,
        mode,
        nanmedian,
        nanquantile,
        quantile,
    )
    from scratchgrad.func import vmap
    from scratchgrad import foreach  # torch._foreach_*, as EMA and optimizer code calls them
    from scratchgrad import backend as _backend

    # the dtypes, as PyTorch's: ``scratchgrad.dtype`` objects, under PyTorch's names and aliases
    float16 = half = _backend.dtype_of(_backend.float16)
    bfloat16 = _backend.dtype_of(_backend.bfloat16)
    float32 = float = _backend.dtype_of(_backend.float32)
    float64 = double = _backend.dtype_of(_backend.float64)
    complex64 = cfloat = _backend.dtype_of(_backend.complex64)
    complex128 = cdouble = _backend.dtype_of(_backend.complex128)
    uint8 = _backend.dtype_of(_backend.uint8)
    uint16 = _backend.dtype_of(_backend.uint16)
    uint32 = _backend.dtype_of(_backend.uint32)
    uint64 = _backend.dtype_of(_backend.uint64)
    int8 = _backend.dtype_of(_backend.int8)
    int16 = short = _backend.dtype_of(_backend.int16)
    int32 = int = _backend.dtype_of(_backend.int32)
    int64 = long = _backend.dtype_of(_backend.int64)
    bool = _backend.dtype_of(_backend.bool_)

    globals().update({f"_foreach_{name}": getattr(foreach, name) for name in foreach.__all__})

    # torch's names for linear algebra outside torch.linalg
    det = linalg.det.__wrapped__  # (torch.det takes no out=, torch.linalg.det does)
    inverse, matrix_power = linalg.inv, linalg.matrix_power
    matrix_exp = linalg.matrix_exp
    orgqr = linalg.householder_product  # (LAPACK's name for it, with its out=)
    from scratchgrad.linalg.extras import chain_matmul, geqrf, ormqr
    from scratchgrad.linalg.legacy import (
        cholesky,
        cholesky_inverse,
        cholesky_solve,
        eig,
        logdet,
        lstsq,
        lu,
        lu_solve,
        lu_unpack,
        matrix_rank,
        pinverse,
        qr,
        slogdet,
        solve,
        svd,
        symeig,
        triangular_solve,
        vander,
    )

    # Module functions with the methods' names: scratchgrad.exp(x) is x.exp().
    abs = Tensor.abs
    amax, amin, argmax, argmin = Tensor.amax, Tensor.amin, Tensor.argmax, Tensor.argmin
    clamp = clip = Tensor.clamp
    cos, exp, log, sin, sqrt, tanh = (
        Tensor.cos,
        Tensor.exp,
        Tensor.log,
        Tensor.sin,
        Tensor.sqrt,
        Tensor.tanh,
    )
    sigmoid, relu, sign, neg = Tensor.sigmoid, Tensor.relu, Tensor.sign, Tensor.neg
    negative = Tensor.negative
    flatten, reshape, permute, transpose = (
        Tensor.flatten,
        Tensor.reshape,
        Tensor.permute,
        Tensor.transpose,
    )
    squeeze, unsqueeze, gather = Tensor.squeeze, Tensor.unsqueeze, Tensor.gather
    split, chunk, narrow = Tensor.split, Tensor.chunk, Tensor.narrow
    unsafe_split, unsafe_chunk = Tensor.unsafe_split, Tensor.unsafe_chunk
    unsafe_split_with_sizes, nonzero_static = Tensor.unsafe_split_with_sizes, Tensor.nonzero_static
    matmul, maximum, minimum = Tensor.matmul, Tensor.maximum, Tensor.minimum
    mean, var, std, prod = Tensor.mean, Tensor.var, Tensor.std, Tensor.prod
    max, min, norm, logsumexp = Tensor.max, Tensor.min, Tensor.norm, Tensor.logsumexp
    softmax, log_softmax, masked_fill = Tensor.softmax, Tensor.log_softmax, Tensor.masked_fill
    any, all, square, rsqrt = Tensor.any, Tensor.all, Tensor.square, Tensor.rsqrt
    tril, triu, topk, multinomial = Tensor.tril, Tensor.triu, Tensor.topk, Tensor.multinomial
    bernoulli = Tensor.bernoulli
    mm, bmm = Tensor.mm, Tensor.bmm
    # More methods that PyTorch also has as functions, under the same names.
    eq, ne, lt, le, gt, ge = Tensor.eq, Tensor.ne, Tensor.lt, Tensor.le, Tensor.gt, Tensor.ge
    isnan, isinf, isfinite = Tensor.isnan, Tensor.isinf, Tensor.isfinite
    isclose, allclose, equal, trace = Tensor.isclose, Tensor.allclose, Tensor.equal, Tensor.trace
    clamp_min, clamp_max, nan_to_num = Tensor.clamp_min, Tensor.clamp_max, Tensor.nan_to_num
    scatter, scatter_add, scatter_reduce = Tensor.scatter, Tensor.scatter_add, Tensor.scatter_reduce
    take_along_dim, index_fill, index_copy = (
        Tensor.take_along_dim,
        Tensor.index_fill,
        Tensor.index_copy,
    )
    repeat_interleave, diag = Tensor.repeat_interleave, Tensor.diag
    logical_not, logical_and = Tensor.logical_not, Tensor.logical_and
    logical_or, logical_xor = Tensor.logical_or, Tensor.logical_xor
    dot, mv, outer, lerp, hypot = Tensor.dot, Tensor.mv, Tensor.outer, Tensor.lerp, Tensor.hypot
    addcmul, addcdiv = Tensor.addcmul, Tensor.addcdiv
    numel = Tensor.numel
    is_floating_point = Tensor.is_floating_point
    concat = concatenate = cat
    swapaxes, swapdims, broadcast_to, tile = (
        Tensor.swapaxes,
        Tensor.swapdims,
        Tensor.broadcast_to,
        Tensor.tile,
    )
    fliplr, flipud, masked_select = Tensor.fliplr, Tensor.flipud, Tensor.masked_select
    nonzero, argwhere, count_nonzero = Tensor.nonzero, Tensor.argwhere, Tensor.count_nonzero
    unique, unique_consecutive = Tensor.unique, Tensor.unique_consecutive

    def is_tensor(obj) -> bool:
        """Whether ``obj`` is a scratchgrad Tensor."""
        return isinstance(obj, Tensor)

    def dropout(input: Tensor, p: float, train: bool) -> Tensor:
        """``torch.dropout``: ``nn.functional.dropout`` with ``train`` given, and PyTorch's
        RuntimeError (not F.dropout's ValueError) for ``p`` outside [0, 1].

        >>> dropout(ones(3), 0.5, False).tolist()
        [1.0, 1.0, 1.0]
        """
        if not 0 <= p <= 1:
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
        return nn.functional.dropout(input, p, train)

    log1p, expm1, log2, log10, exp2 = (
        Tensor.log1p,
        Tensor.expm1,
        Tensor.log2,
        Tensor.log10,
        Tensor.exp2,
    )
    tan, asin, acos, atan, atan2 = Tensor.tan, Tensor.asin, Tensor.acos, Tensor.atan, Tensor.atan2
    sinh, cosh, asinh, acosh, atanh = (
        Tensor.sinh,
        Tensor.cosh,
        Tensor.asinh,
        Tensor.acosh,
        Tensor.atanh,
    )
    arcsin, arccos, arctan, arctan2 = Tensor.arcsin, Tensor.arccos, Tensor.arctan, Tensor.arctan2
    arcsinh, arccosh, arctanh = Tensor.arcsinh, Tensor.arccosh, Tensor.arctanh
    reciprocal, erf, erfc, frac = Tensor.reciprocal, Tensor.erf, Tensor.erfc, Tensor.frac
    floor, ceil, round, trunc, fix = (
        Tensor.floor,
        Tensor.ceil,
        Tensor.round,
        Tensor.trunc,
        Tensor.fix,
    )
    addmm, baddbmm, sort, argsort = Tensor.addmm, Tensor.baddbmm, Tensor.sort, Tensor.argsort
    cumsum, cumprod, roll, index_select = (
        Tensor.cumsum,
        Tensor.cumprod,
        Tensor.roll,
        Tensor.index_select,
    )
    movedim, select, unbind, t = Tensor.movedim, Tensor.select, Tensor.unbind, Tensor.t
    index_add = Tensor.index_add
    unflatten, tensor_split, diff = Tensor.unflatten, Tensor.tensor_split, Tensor.diff
    logaddexp, cross = Tensor.logaddexp, Tensor.cross
    median, kthvalue, cummax, cummin = Tensor.median, Tensor.kthvalue, Tensor.cummax, Tensor.cummin
    diagonal, diag_embed, rot90, take = (
        Tensor.diagonal,
        Tensor.diag_embed,
        Tensor.rot90,
        Tensor.take,
    )
    kron, dist, fmod, erfinv = Tensor.kron, Tensor.dist, Tensor.fmod, Tensor.erfinv

    # shape, reduction and real-number names (tensor.py's methods of the same names)
    adjoint, conj, conj_physical, resolve_conj, resolve_neg, angle = (
        Tensor.adjoint,
        Tensor.conj,
        Tensor.conj_physical,
        Tensor.resolve_conj,
        Tensor.resolve_neg,
        Tensor.angle,
    )
    is_complex, is_conj, is_neg, is_signed, is_nonzero, is_same_size = (
        Tensor.is_complex,
        Tensor.is_conj,
        Tensor.is_neg,
        Tensor.is_signed,
        Tensor.is_nonzero,
        Tensor.is_same_size,
    )
    hsplit, vsplit, dsplit, split_with_sizes, moveaxis, ravel, diagflat = (
        Tensor.hsplit,
        Tensor.vsplit,
        Tensor.dsplit,
        Tensor.split_with_sizes,
        Tensor.moveaxis,
        Tensor.ravel,
        Tensor.diagflat,
    )
    addmv, addr, addbmm, renorm = Tensor.addmv, Tensor.addr, Tensor.addbmm, Tensor.renorm
    ger, inner, vdot, nansum, nanmean, msort, aminmax = (
        Tensor.ger,
        Tensor.inner,
        Tensor.vdot,
        Tensor.nansum,
        Tensor.nanmean,
        Tensor.msort,
        Tensor.aminmax,
    )

    from math import e, inf, nan, pi  # torch.e, torch.inf, torch.nan, torch.pi

    # torch.sparse (COO tensors, sparse.mm, sparse.sum): last, as its sparse tensors refuse
    # every Tensor method they lack, attached ones included
    from scratchgrad import sparse
    from scratchgrad.sparse import sparse_coo_tensor, spmm

    newaxis = None

    # the in-place forms PyTorch also exports at its root (torch.sigmoid_(x) is x.sigmoid_())
    _root_in_place = (
        "abs_",
        "acos_",
        "acosh_",
        "addmv_",
        "arccos_",
        "arccosh_",
        "arcsin_",
        "arcsinh_",
        "arctan_",
        "arctanh_",
        "asin_",
        "asinh_",
        "atan_",
        "atanh_",
        "ceil_",
        "clamp_",
        "clamp_max_",
        "clamp_min_",
        "clip_",
        "cos_",
        "cosh_",
        "deg2rad_",
        "detach_",
        "erf_",
        "erfc_",
        "exp2_",
        "exp_",
        "expm1_",
        "fill_",
        "fix_",
        "floor_",
        "frac_",
        "gcd_",
        "i0_",
        "lcm_",
        "ldexp_",
        "log10_",
        "log1p_",
        "log2_",
        "log_",
        "logit_",
        "nan_to_num_",
        "neg_",
        "negative_",
        "rad2deg_",
        "reciprocal_",
        "round_",
        "rsqrt_",
        "sigmoid_",
        "sin_",
        "sinc_",
        "sinh_",
        "sqrt_",
        "square_",
        "tan_",
        "tanh_",
        "trunc_",
        "xlogy_",
        "zero_",
    )
    globals().update({name: getattr(Tensor, name) for name in _root_in_place})

    def real(input: Tensor) -> Tensor:
        return input.real

    def imag(input: Tensor) -> Tensor:
        return input.imag

    # PyTorch's other elementwise names (tensor.py's methods of the same names)
    lgamma, digamma, mvlgamma, i0, sinc, logit = (
        Tensor.lgamma,
        Tensor.digamma,
        Tensor.mvlgamma,
        Tensor.i0,
        Tensor.sinc,
        Tensor.logit,
    )
    copysign, fmax, fmin, heaviside, ldexp, frexp = (
        Tensor.copysign,
        Tensor.fmax,
        Tensor.fmin,
        Tensor.heaviside,
        Tensor.ldexp,
        Tensor.frexp,
    )
    nextafter, gcd, lcm, logaddexp2, logcumsumexp = (
        Tensor.nextafter,
        Tensor.gcd,
        Tensor.lcm,
        Tensor.logaddexp2,
        Tensor.logcumsumexp,
    )
    signbit, isposinf, isneginf, isreal = (
        Tensor.signbit,
        Tensor.isposinf,
        Tensor.isneginf,
        Tensor.isreal,
    )
    deg2rad, rad2deg, sgn, positive, absolute = (
        Tensor.deg2rad,
        Tensor.rad2deg,
        Tensor.sgn,
        Tensor.positive,
        Tensor.absolute,
    )
    bitwise_not, igamma, igammac = Tensor.bitwise_not, Tensor.igamma, Tensor.igammac
    greater, greater_equal, less, less_equal, not_equal = (
        Tensor.greater,
        Tensor.greater_equal,
        Tensor.less,
        Tensor.less_equal,
        Tensor.not_equal,
    )

    from scratchgrad.autograd.autocast import without_autocast as _without_autocast
    from scratchgrad.dtypes import python_number as _python_number
    from scratchgrad.dtypes import result_dtype as _result_dtype
    from scratchgrad.dtypes import wrapped_int as _wrapped_int
    from scratchgrad.tensor import OUT_READS_UNCHECKED as _OUT_READS_UNCHECKED
    from scratchgrad.tensor import OUT_READS_UNCHECKED_OF_ALL as _OUT_READS_UNCHECKED_OF_ALL
    from scratchgrad.tensor import invalid_combination
    from scratchgrad.tensor import strided_arguments as _strided_arguments
    from scratchgrad.tensor import takes_out as _takes_out
    from scratchgrad.tensor import write_out as _write_out

    def _written_out(name: str, result: Tensor, out: Tensor, read: tuple) -> Tensor:
        """``write_out`` of a module function that read ``read`` (PyTorch checks those
        against ``out`` unless the op is among ``OUT_READS_UNCHECKED``, or among
        ``OUT_READS_UNCHECKED_OF_ALL`` and given the input alone)."""
        unchecked = name in _OUT_READS_UNCHECKED or (
            name in _OUT_READS_UNCHECKED_OF_ALL and len(read) == 1
        )
        return _write_out(name, result, out, () if unchecked else read)

    def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:
        """``torch.polygamma(n, input)``: ``input.polygamma(n)``, the n-th derivative of
        digamma; ``out`` as ``tensor.write_out`` says.

        >>> polygamma(1, tensor([1.0]))  # pi**2 / 6
        tensor([1.6449])
        """
        if not isinstance(input, Tensor):
            raise TypeError(
                f"polygamma(): argument 'input' (position 2) must be Tensor, not "
                f"{type(input).__name__}"
            )
        result = input.polygamma(n)
        return result if out is None else _write_out("polygamma", result, out, (input,))

    def flip(input: Tensor, dims: tuple | list) -> Tensor:
        """``torch.flip(input, dims)``: ``input.flip(dims)``, ``dims`` a tuple or list (an
        int is PyTorch's TypeError, where the method takes ints).

        >>> flip(tensor([[1, 2], [3, 4]]), (1,)).tolist()
        [[2, 1], [4, 3]]
        """
        if isinstance(dims, _numbers.Integral):  # (``int`` is the dtype here)
            raise TypeError("flip(): argument 'dims' (position 2) must be tuple of ints, not int")
        return input.flip(dims=dims)

    def _wrapped_number(number, other: Tensor, divides: bool) -> Tensor:
        """A Python number first operand as PyTorch reads it: a 0-d tensor that widens
        nothing, so in the dtype the number gives beside ``other`` (``add(2.5, half_t)`` is
        float16), an int wrapped into an integer dtype as ``other + number`` wraps it, but
        read as a float where it ``divides`` (true division: ``div(300, uint8_t)`` is 300 / t)."""
        if number is True or number is False:  # a bool widens nothing (and subtracts none)
            return tensor(number).to(other.device)
        if divides:
            number = _python_number(number) * 1.0  # (``float`` is the dtype here)
        result = _result_dtype(other, number)
        if result.kind in "iu":
            number = _wrapped_int(_python_number(number), result)
        return tensor(number, dtype=result).to(other.device)

    def _number_first(method, numbers_alone: bool = False):
        """The module function of a binary method whose first operand may also be a Python
        number, as PyTorch's ``xlogy(2, t)``, ``float_power(2, t)``, ``bitwise_and(3, t)``,
        ``remainder(5, t)``, ``pow(2, t)``, ``add(2, t)``; and its ``out=`` (see
        ``tensor.write_out``). With ``numbers_alone``, two numbers make a tensor, as
        ``add(5, 2)`` and ``div(5, 2)`` do in PyTorch."""

        @_functools.wraps(method)
        def function(input, *args, out=None, **kwargs):
            other = args[0] if args else next(iter(kwargs.values()), None)
            if not isinstance(input, Tensor) and isinstance(input, _numbers.Number):
                if isinstance(other, Tensor):
                    divides = method.__name__ in ("div", "divide", "true_divide")
                    divides = divides and kwargs.get("rounding_mode") is None
                    input = _wrapped_number(input, other, divides)
                elif numbers_alone:
                    input = tensor(input)
            if not isinstance(input, Tensor):
                raise TypeError(
                    f"{method.__name__}(): argument 'input' (position 1) must be Tensor, not "
                    f"{type(input).__name__}"
                )
            result = method(input, *args, **kwargs)
            if out is None:
                return result
            return _written_out(method.__name__, result, out, (input, *args, *kwargs.values()))

        function.__qualname__ = method.__name__  # (not rewrapped by _takes_a_tensor below)
        return function

    xlogy = _number_first(Tensor.xlogy)
    _float_power = _number_first(Tensor.float_power)

    def float_power(input, exponent, *, out: Tensor | None = None) -> Tensor:
        """``torch.float_power``: ``input ** exponent`` in float64 (complex128), into an
        ``out`` of that dtype only, as PyTorch's (which refuses a float32 one).

        >>> float_power(2, tensor([3]))
        tensor([8.], dtype=scratchgrad.float64)
        """
        result = _float_power(input, exponent)
        if isinstance(out, Tensor) and out.dtype != result.dtype:
            raise RuntimeError(
                f"the output given to float_power has dtype {out.dtype.name} but the operation's "
                f"result requires dtype {result.dtype.name}"
            )
        read = (input, exponent)
        return result if out is None else _write_out("float_power", result, out, read)

    remainder, pow = _number_first(Tensor.remainder), _number_first(Tensor.pow)
    add, sub, mul, div, true_divide, floor_divide, subtract, multiply, divide = (
        _number_first(method, numbers_alone=True)
        for method in (
            Tensor.add,
            Tensor.sub,
            Tensor.mul,
            Tensor.div,
            Tensor.true_divide,
            Tensor.floor_divide,
            Tensor.subtract,
            Tensor.multiply,
            Tensor.divide,
        )
    )
    bitwise_and, bitwise_or, bitwise_xor = map(
        _number_first, (Tensor.bitwise_and, Tensor.bitwise_or, Tensor.bitwise_xor)
    )
    bitwise_left_shift, bitwise_right_shift = map(
        _number_first, (Tensor.bitwise_left_shift, Tensor.bitwise_right_shift)
    )

    def _calls_method(name: str):
        """A module function that calls its argument's own method ``name``, so a subclass's
        override applies: vmap's batched tensors override the methods that read values."""
        method = getattr(Tensor, name)

        def function(input, *args, **kwargs):
            return getattr(input, name)(*args, **kwargs)

        function.__name__, function.__doc__ = name, method.__doc__
        return function

    argmax, argmin, argsort, any, all, clamp, clip, gather, topk = map(
        _calls_method,
        ("argmax", "argmin", "argsort", "any", "all", "clamp", "clip", "gather", "topk"),
    )
    # and those a sparse tensor overrides (Tensor.detach would wrap its stand-in array)
    sum, detach, clone = map(_calls_method, ("sum", "detach", "clone"))

    def _strided_function(name: str):
        """The module function of ``Tensor.as_strided`` or ``as_strided_``: PyTorch's
        TypeErrors count the input among the positions; the input's own method is called, so
        a batched tensor's refusal of ``as_strided_`` applies."""

        def function(input, size, stride, storage_offset=None):
            _strided_arguments(name, size, stride, storage_offset, first=2)
            return getattr(input, name)(size, stride, storage_offset)

        function.__name__, function.__doc__ = name, getattr(Tensor, name).__doc__
        return function

    as_strided, as_strided_ = map(_strided_function, ("as_strided", "as_strided_"))

    # the module functions of methods that PyTorch gives no out= (views, splits, copies, tests
    # of values, ...: tried one by one against torch 2.13)
    _NO_OUT = frozenset({
        "adjoint", "allclose", "argwhere", "as_strided", "as_strided_", "broadcast_to", "chunk",
        "clone", "conj", "count_nonzero", "detach", "detach_", "diag_embed", "diagflat", "diagonal",
        "dist", "dsplit", "equal", "fill_", "flatten", "fliplr", "flipud", "hsplit",
        "index_fill", "is_complex", "is_conj", "is_floating_point", "is_neg", "is_nonzero",
        "is_same_size", "is_signed", "isclose", "isfinite", "isinf", "isnan", "isreal",
        "masked_fill", "moveaxis", "movedim", "narrow", "numel", "permute", "positive", "ravel",
        "relu", "repeat_interleave", "reshape", "resolve_conj", "resolve_neg", "roll", "rot90",
        "rsub", "select", "split", "split_with_sizes", "squeeze", "swapaxes", "swapdims", "t",
        "tensor_split", "tile", "trace", "transpose", "unbind", "unflatten", "unique",
        "unique_consecutive", "unsafe_chunk", "unsafe_split", "unsqueeze", "vsplit", "zero_",
    })  # fmt: skip
    # and those whose out= PyTorch takes with some arguments only (its overloads): sum(x, 0)
    # but not sum(x), argsort(x, stable=True) but not argsort(x), bernoulli(x) but not
    # bernoulli(x, 0.5)
    _OUT_ONLY_IF = {
        "sum": lambda args, kwargs: args != () or "dim" in kwargs,
        "prod": lambda args, kwargs: args != () or "dim" in kwargs,
        "median": lambda args, kwargs: args != () or "dim" in kwargs,
        "argsort": lambda args, kwargs: "stable" in kwargs,
        "bernoulli": lambda args, kwargs: not args and "p" not in kwargs,
    }

    _SCALES_FIRST = {"addmm", "addmv", "addr", "addbmm", "baddbmm"}

    def _numbers_first(input, args) -> bool:
        first_of_args = args[0] if args else None
        return isinstance(input, _numbers.Number) or isinstance(first_of_args, _numbers.Number)

    def _scales_after_input(name: str, beta, args: tuple) -> tuple:
        """The deprecated ``torch.addmm(beta, input, [alpha,] mat1, mat2)`` as the method's
        ``input.addmm(beta, [alpha,] mat1, mat2)``, which warns; ``torch.addmm(input, beta,
        ...)`` is no overload of the function, as PyTorch's."""
        if not isinstance(beta, _numbers.Number) or not args or not isinstance(args[0], Tensor):
            raise invalid_combination(name, beta, *args)
        return args[0], (beta, *args[1:])

    def _takes_a_tensor(function, name: str):
        """PyTorch's TypeError when the module function ``name`` gets something else than a
        tensor first (``sg.exp([1.0])``: "exp(): argument 'input' (position 1) must be Tensor,
        not list"), and its ``out=`` (see ``tensor.write_out``) where PyTorch's takes one."""

        out_allowed = _OUT_ONLY_IF.get(name, lambda args, kwargs: True)

        @_functools.wraps(function)
        def checked(input, *args, out=None, **kwargs):
            if name in _SCALES_FIRST and _numbers_first(input, args):
                input, args = _scales_after_input(name, input, args)
            if not isinstance(input, Tensor):
                raise TypeError(
                    f"{function.__name__}(): argument 'input' (position 1) must be Tensor, "
                    f"not {type(input).__name__}"
                )
            if out is not None and (name in _NO_OUT or not out_allowed(args, kwargs)):
                raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
            if out is None:
                return function(input, *args, **kwargs)
            # (PyTorch's out= overloads are not autocast)
            result = _without_autocast(function, input, *args, **kwargs)
            read = (input, *args, *kwargs.values())
            return _written_out(function.__name__, result, out, read)

        return checked

    for _name, _value in list(globals().items()):  # the methods bound to module names above
        _qualname = getattr(_value, "__qualname__", "")
        if _qualname.startswith(("Tensor.", "_calls_method.", "_strided_function.")):
            globals()[_name] = _takes_a_tensor(_value, _name)
    flip = _takes_a_tensor(flip, "flip")
    rsub = _takes_a_tensor(rsub, "rsub")
    # (torch.threshold's and torch.hardshrink's out=, which F.threshold and F.hardshrink lack)
    threshold = _takes_out(threshold, elementwise=True)
    hardshrink = _takes_out(hardshrink, elementwise=True)

__version__ = "0.1.0"


def __getattr__(name: str):
    # torch.onnx without `import torch.onnx`: loaded when first asked for, so that importing
    # scratchgrad loads neither the exporter nor the onnx package
    if name == "onnx":
        import importlib

        return importlib.import_module("scratchgrad.onnx")
    raise AttributeError(f"module 'scratchgrad' has no attribute '{name}'")
